//! The three delivery bindings over real loopback sockets: SOAP over HTTP, length-prefixed
//! SOAP over TCP (`soap.tcp://`) and the binary frame (`lather.bin://`); a dead TCP sink
//! ends with DeliveryFailure, a sink that stops reading does not delay another, and an
//! unknown scheme is refused at Subscribe naming the supported ones.

use crate::support::{delivery_failure, http_sink, two_attempts};
use bytes::Bytes;
use lather_envelope::{Envelope, FaultKind, Limits, QName};
use lather_eventing::binding::binary::{self, FieldKind, Frame};
use lather_eventing::binding::tcp::split_length_prefixed;
use lather_eventing::{Event, EventHeader, EventSource, SourceSettings};
use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::AsyncReadExt;
use tokio::net::TcpListener;
use tokio::sync::mpsc;

const WSE04: &str = "http://schemas.xmlsoap.org/ws/2004/08/eventing";
const WSE11: &str = "http://www.w3.org/2011/03/ws-evt";
const WSA10: &str = "http://www.w3.org/2005/08/addressing";

fn subscribe(wse: &str, notify: &str, end_to: Option<SocketAddr>) -> Envelope {
    let end_to = end_to.map_or(String::new(), |a| {
        format!("<wse:EndTo><wsa:Address>http://{a}/end</wsa:Address></wse:EndTo>")
    });
    let text = format!(
        r#"<s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope"><s:Body><wse:Subscribe xmlns:wse="{wse}" xmlns:wsa="{WSA10}">{end_to}<wse:Delivery><wse:NotifyTo><wsa:Address>{notify}</wsa:Address><wsa:ReferenceParameters><k:Key xmlns:k="urn:k">42</k:Key></wsa:ReferenceParameters></wse:NotifyTo></wse:Delivery></wse:Subscribe></s:Body></s:Envelope>"#
    );
    Envelope::parse(Bytes::from(text), &Limits::default()).unwrap()
}

fn event(n: u32, filler: usize) -> Event {
    Event {
        payload: Bytes::from(format!(
            r#"<q:Quote xmlns:q="urn:q" n="{n}">{}</q:Quote>"#,
            "x".repeat(filler)
        )),
        action: Some("urn:q:Quote".into()),
        topics: vec!["{urn:q}Quote".into()],
        headers: vec![EventHeader {
            namespace: "urn:auth".into(),
            local: "Auth".into(),
            text: "tok&en".into(),
        }],
    }
}

fn fast_retries() -> SourceSettings {
    SourceSettings {
        retry: two_attempts(),
        ..SourceSettings::allowing_loopback()
    }
}

/// A TCP sink: accepts connections and sends every byte chunk it reads down the channel.
async fn tcp_sink() -> (SocketAddr, mpsc::UnboundedReceiver<Vec<u8>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let tx = tx.clone();
            tokio::spawn(async move {
                let mut buf = vec![0u8; 64 * 1024];
                while let Ok(n) = stream.read(&mut buf).await {
                    if n == 0 || tx.send(buf[..n].to_vec()).is_err() {
                        break;
                    }
                }
            });
        }
    });
    (addr, rx)
}

/// Reads from `rx` until `split` yields `count` frames.
async fn frames<T>(
    rx: &mut mpsc::UnboundedReceiver<Vec<u8>>,
    count: usize,
    split: impl Fn(&[u8]) -> Option<(T, usize)>,
) -> Vec<T> {
    let mut buf = Vec::new();
    let mut out = Vec::new();
    while out.len() < count {
        while let Some((frame, used)) = split(&buf) {
            out.push(frame);
            buf.drain(..used);
        }
        if out.len() >= count {
            break;
        }
        let chunk = tokio::time::timeout(Duration::from_secs(5), rx.recv())
            .await
            .expect("frames in time")
            .expect("sink open");
        buf.extend_from_slice(&chunk);
    }
    out
}

/// `source` subscribes `notify` ([`subscribe`]); it must take it.
async fn subscribed(source: &EventSource, wse: &str, notify: &str, end_to: Option<SocketAddr>) {
    source
        .handle(&subscribe(wse, notify, end_to), "http://h/e")
        .await
        .unwrap();
}

/// An [`http_sink`] subscribed (WS-Eventing 2011) to `source`; its bodies.
async fn subscribed_http_sink(source: &EventSource) -> mpsc::UnboundedReceiver<String> {
    let (addr, rx) = http_sink().await;
    subscribed(source, WSE11, &format!("http://{addr}/n"), None).await;
    rx
}

/// Checks a SOAP notification of `event(n, _)` as a sink would read it.
fn check_envelope(bytes: &[u8], n: u32, source: &EventSource) -> u64 {
    let env = Envelope::parse(Bytes::copy_from_slice(bytes), &Limits::default()).unwrap();
    let payload = String::from_utf8(env.extract_payload().unwrap().to_vec()).unwrap();
    assert!(payload.contains(&format!(r#"n="{n}""#)), "{payload}");
    let key = env
        .header(&QName::new("urn:k", "Key"))
        .expect("reference parameter");
    assert_eq!(env.header_text(key).as_deref(), Some("42"));
    let auth = env
        .header(&QName::new("urn:auth", "Auth"))
        .expect("event header");
    assert_eq!(env.header_text(auth).as_deref(), Some("tok&en"));
    let action = env
        .header(&QName::new(WSA10, "Action"))
        .and_then(|b| env.header_text(b));
    assert_eq!(action.as_deref(), Some("urn:q:Quote"));
    let text = String::from_utf8_lossy(bytes);
    assert!(text.contains("<lev:EventStamp"), "{text}");
    assert!(!source.subscriptions().is_empty());
    let seq = text.split("seq=\"").nth(1).unwrap();
    seq[..seq.find('"').unwrap()].parse().unwrap()
}

#[tokio::test]
async fn soap_over_http_carries_the_stamp_headers_and_parameters_in_order() {
    let source = EventSource::open(SourceSettings::allowing_loopback()).unwrap();
    let mut rx = subscribed_http_sink(&source).await;
    // Many at once: they go pipelined on one connection and still arrive in order.
    let mut seqs = Vec::new();
    for n in 0..200 {
        assert_eq!(source.publish_event(event(n, 10)), 1);
    }
    for n in 0..200 {
        let body = tokio::time::timeout(Duration::from_secs(5), rx.recv())
            .await
            .unwrap()
            .unwrap();
        seqs.push(check_envelope(body.as_bytes(), n, &source));
    }
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");
}

#[tokio::test]
async fn an_http_sink_gets_each_action_whole_when_the_action_changes_between_events() {
    // A request's start is kept per action: when the action changes, it is made again, and
    // each request still says its own action and length (the sink parses every one).
    let source = EventSource::open(SourceSettings::allowing_loopback()).unwrap();
    let mut rx = subscribed_http_sink(&source).await;
    let actions = [
        "urn:q:A",
        "urn:q:A",
        "urn:q:Longer&Other",
        "urn:q:A",
        "urn:q:B",
    ];
    for (n, action) in actions.iter().enumerate() {
        let mut e = event(n as u32, 10 + 300 * n);
        e.action = Some((*action).into());
        assert_eq!(source.publish_event(e), 1);
    }
    for (n, action) in actions.iter().enumerate() {
        let body = tokio::time::timeout(Duration::from_secs(5), rx.recv())
            .await
            .unwrap()
            .unwrap();
        let env = Envelope::parse(Bytes::from(body), &Limits::default()).unwrap();
        let said = env
            .header(&QName::new(WSA10, "Action"))
            .and_then(|b| env.header_text(b));
        assert_eq!(said.as_deref(), Some(*action));
        let payload = String::from_utf8(env.extract_payload().unwrap().to_vec()).unwrap();
        assert!(payload.contains(&format!(r#"n="{n}""#)), "{payload}");
        assert!(payload.ends_with("</q:Quote>"), "whole: {payload}");
    }
}

#[tokio::test]
async fn soap_over_tcp_frames_each_envelope_with_its_length() {
    let source = EventSource::open(SourceSettings::allowing_loopback()).unwrap();
    let (addr, mut rx) = tcp_sink().await;
    subscribed(&source, WSE04, &format!("soap.tcp://{addr}"), None).await;
    for n in 0..20 {
        assert_eq!(source.publish_event(event(n, 100)), 1);
    }
    let envelopes = frames(&mut rx, 20, |buf| {
        split_length_prefixed(buf)
            .unwrap()
            .map(|(f, used)| (f.to_vec(), used))
    })
    .await;
    let mut last = 0;
    for (n, bytes) in envelopes.iter().enumerate() {
        let seq = check_envelope(bytes, n as u32, &source);
        assert!(seq > last);
        last = seq;
    }
}

#[tokio::test]
async fn binary_frames_carry_id_sequence_time_action_fields_and_payload() {
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let probe = {
        let seen = seen.clone();
        lather_eventing::DeliveryProbe(std::sync::Arc::new(
            move |id: &str, seq, published, ready| {
                seen.lock()
                    .unwrap()
                    .push((id.to_owned(), seq, published, ready));
            },
        ))
    };
    let source = EventSource::open(SourceSettings {
        delivered: Some(probe),
        ..SourceSettings::allowing_loopback()
    })
    .unwrap();
    let (addr, mut rx) = tcp_sink().await;
    subscribed(&source, WSE11, &format!("lather.bin://{addr}"), None).await;
    let id = source.subscriptions()[0].id.clone();
    let before = lather_eventing::unix_ns();
    for n in 0..20 {
        assert_eq!(source.publish_event(event(n, 100)), 1);
    }
    let got: Vec<Frame> = frames(&mut rx, 20, |buf| binary::decode(buf).unwrap()).await;
    for (n, frame) in got.iter().enumerate() {
        assert_eq!(frame.subscription, id);
        assert_eq!(frame.action, "urn:q:Quote");
        assert_eq!(frame.topic, "{urn:q}Quote");
        assert!(frame.published_ns >= before && frame.published_ns <= lather_eventing::unix_ns());
        let payload = String::from_utf8(frame.payload.clone()).unwrap();
        assert!(payload.starts_with(&format!(r#"<q:Quote xmlns:q="urn:q" n="{n}">"#)));
        assert_eq!(frame.fields.len(), 2);
        assert_eq!(frame.fields[0].kind, FieldKind::ReferenceParameter);
        assert_eq!(frame.fields[0].name, "{urn:k}Key");
        assert_eq!(frame.fields[0].value, "42");
        assert_eq!(frame.fields[1].kind, FieldKind::Header);
        assert_eq!(frame.fields[1].name, "{urn:auth}Auth");
        assert_eq!(frame.fields[1].value, "tok&en");
    }
    assert!(got.windows(2).all(|w| w[0].seq < w[1].seq));
    // The probe saw each notification once, ready after it was published.
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 20);
    for ((sid, seq, published, ready), frame) in seen.iter().zip(&got) {
        assert_eq!(sid, &id);
        assert_eq!((*seq, *published), (frame.seq, frame.published_ns));
        assert!(ready >= published);
    }
}

#[tokio::test]
async fn a_dead_tcp_sink_ends_with_delivery_failure() {
    for scheme in ["soap.tcp", "lather.bin"] {
        let source = EventSource::open(fast_retries()).unwrap();
        let dead = {
            let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
            l.local_addr().unwrap()
        };
        let (end_to, mut ends) = http_sink().await;
        subscribed(&source, WSE11, &format!("{scheme}://{dead}"), Some(end_to)).await;
        assert_eq!(source.publish_event(event(0, 1)), 1);
        delivery_failure(&mut ends).await;
        assert!(source.subscriptions().is_empty(), "{scheme}");
    }
}

#[tokio::test]
async fn a_sink_that_stops_reading_does_not_delay_another() {
    // The publisher outruns both sinks here: their queues hold all 25 MiB (shared).
    let source = EventSource::open(SourceSettings {
        queue_capacity: 10_000,
        sink_queue_bytes: 64 * 1024 * 1024,
        ..SourceSettings::allowing_loopback()
    })
    .unwrap();
    // Accepts and then never reads: its socket buffers fill and the writer waits.
    let stuck = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let stuck_addr = stuck.local_addr().unwrap();
    let held = tokio::spawn(async move {
        let mut kept = Vec::new();
        while let Ok((s, _)) = stuck.accept().await {
            kept.push(s);
        }
    });
    let (fast, mut rx) = tcp_sink().await;
    subscribed(&source, WSE11, &format!("lather.bin://{stuck_addr}"), None).await;
    subscribed(&source, WSE11, &format!("lather.bin://{fast}"), None).await;
    // 400 × 64 KiB = 25 MiB: far beyond what loopback buffers hold for the stuck sink.
    let started = std::time::Instant::now();
    for n in 0..400 {
        assert_eq!(source.publish_event(event(n, 64 * 1024)), 2);
    }
    let got: Vec<Frame> = frames(&mut rx, 400, |buf| binary::decode(buf).unwrap()).await;
    assert_eq!(got.len(), 400);
    assert!(started.elapsed() < Duration::from_secs(5));
    held.abort();
}

#[tokio::test]
async fn an_unknown_scheme_is_refused_naming_the_supported_ones() {
    let source = EventSource::open(SourceSettings::allowing_loopback()).unwrap();
    for (wse, kind) in [
        (WSE11, FaultKind::UnusableEpr),
        (WSE04, FaultKind::InvalidEventingMessage),
    ] {
        for address in [
            "udp://127.0.0.1:9",
            "soap.tcp://no-port",
            "lather.bin://h:0",
        ] {
            let fault = source
                .handle(&subscribe(wse, address, None), "http://h/e")
                .await
                .unwrap_err();
            assert_eq!(fault.kind(), kind);
            assert!(
                fault
                    .reason()
                    .contains("http://, https://, soap.tcp://host:port, lather.bin://host:port"),
                "{fault}"
            );
        }
    }
    assert!(source.subscriptions().is_empty());
}

const WSNT: &str = "http://docs.oasis-open.org/wsn/b-2";

fn wsn_subscribe(consumer: &str, policy: &str) -> Envelope {
    let text = format!(
        r#"<s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope" xmlns:wsa="{WSA10}"><s:Header><wsa:Action>http://docs.oasis-open.org/wsn/bw-2/NotificationProducer/SubscribeRequest</wsa:Action></s:Header><s:Body><wsnt:Subscribe xmlns:wsnt="{WSNT}"><wsnt:ConsumerReference><wsa:Address>{consumer}</wsa:Address></wsnt:ConsumerReference>{policy}</wsnt:Subscribe></s:Body></s:Envelope>"#
    );
    Envelope::parse(Bytes::from(text), &Limits::default()).unwrap()
}

#[tokio::test]
async fn wsn_subscriptions_get_notify_on_soap_tcp_and_the_raw_event_in_binary_frames() {
    let source = EventSource::open(SourceSettings::allowing_loopback()).unwrap();
    let (tcp_addr, mut tcp_rx) = tcp_sink().await;
    let (bin_addr, mut bin_rx) = tcp_sink().await;
    let (raw_addr, mut raw_rx) = tcp_sink().await;
    for (consumer, policy) in [
        (format!("soap.tcp://{tcp_addr}"), ""),
        (format!("lather.bin://{bin_addr}"), ""),
        (
            format!("soap.tcp://{raw_addr}"),
            "<wsnt:SubscriptionPolicy><wsnt:UseRaw/></wsnt:SubscriptionPolicy>",
        ),
    ] {
        source
            .handle(&wsn_subscribe(&consumer, policy), "http://h/e")
            .await
            .unwrap();
    }
    assert_eq!(source.publish_event(event(7, 10)), 3);
    let split = |b: &[u8]| {
        split_length_prefixed(b)
            .unwrap()
            .map(|(f, used)| (f.to_vec(), used))
    };
    // soap.tcp, wrapped: a wsnt:Notify whose Message holds the event.
    let notify = frames(&mut tcp_rx, 1, split).await.remove(0);
    let env = Envelope::parse(Bytes::from(notify), &Limits::default()).unwrap();
    let op = env.operation().unwrap();
    assert_eq!((op.namespace(), op.local()), (WSNT, "Notify"));
    let action = env
        .header(&QName::new(WSA10, "Action"))
        .and_then(|b| env.header_text(b));
    assert_eq!(
        action.as_deref(),
        Some("http://docs.oasis-open.org/wsn/bw-2/NotificationConsumer/Notify")
    );
    let payload = String::from_utf8(env.extract_payload().unwrap().to_vec()).unwrap();
    assert!(
        payload.contains(r#"<q:Quote xmlns:q="urn:q" n="7">"#),
        "{payload}"
    );
    // soap.tcp, UseRaw: the event itself is the Body, with the event's action.
    let raw = frames(&mut raw_rx, 1, split).await.remove(0);
    let env = Envelope::parse(Bytes::from(raw), &Limits::default()).unwrap();
    let op = env.operation().unwrap();
    assert_eq!((op.namespace(), op.local()), ("urn:q", "Quote"));
    let action = env
        .header(&QName::new(WSA10, "Action"))
        .and_then(|b| env.header_text(b));
    assert_eq!(action.as_deref(), Some("urn:q:Quote"));
    // lather.bin: the raw event in the frame.
    let frame: Frame = frames(&mut bin_rx, 1, |b| binary::decode(b).unwrap())
        .await
        .remove(0);
    assert_eq!(frame.action, "urn:q:Quote");
    assert_eq!(frame.topic, "{urn:q}Quote");
    assert!(String::from_utf8_lossy(&frame.payload).contains(r#"n="7""#));
}

/// An HTTP sink whose first connection takes requests and never answers; later
/// connections answer each request with 202. Reports every request line's arrival.
async fn http_sink_mute_at_first() -> (SocketAddr, mpsc::UnboundedReceiver<usize>) {
    use tokio::io::AsyncWriteExt;
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        let mut connection = 0usize;
        while let Ok((mut stream, _)) = listener.accept().await {
            connection += 1;
            let tx = tx.clone();
            let mute = connection == 1;
            tokio::spawn(async move {
                let mut buf = vec![0u8; 64 * 1024];
                let mut seen = Vec::new();
                while let Ok(n) = stream.read(&mut buf).await {
                    if n == 0 {
                        break;
                    }
                    seen.extend_from_slice(&buf[..n]);
                    // Requests complete in what was read (bodies end with the envelope).
                    while let Some(end) = seen
                        .windows(13)
                        .position(|w| w == b"</s:Envelope>")
                        .map(|i| i + 13)
                    {
                        seen.drain(..end);
                        let _ = tx.send(connection);
                        if !mute {
                            let ok = b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n";
                            if stream.write_all(ok).await.is_err() {
                                return;
                            }
                        }
                    }
                }
            });
        }
    });
    (addr, rx)
}

async fn next_arrival(arrivals: &mut mpsc::UnboundedReceiver<usize>) -> usize {
    tokio::time::timeout(Duration::from_secs(5), arrivals.recv())
        .await
        .expect("in time")
        .expect("the sink is up")
}

#[tokio::test]
async fn an_http_sink_that_stops_answering_gets_the_notification_again_on_a_new_connection() {
    let source = EventSource::open(fast_retries()).unwrap();
    let (addr, mut arrivals) = http_sink_mute_at_first().await;
    subscribed(&source, WSE11, &format!("http://{addr}/n"), None).await;
    assert_eq!(source.publish_event(event(1, 10)), 1);
    // Taken on the first connection and never answered; after the timeout it goes again
    // on a second connection, which answers.
    assert_eq!(next_arrival(&mut arrivals).await, 1);
    assert_eq!(next_arrival(&mut arrivals).await, 2);
    // The subscription lives on: later events go out on the answering connection, each
    // once, with the timeout running afresh for them.
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert_eq!(
        source.subscriptions().len(),
        1,
        "the subscription was ended"
    );
    assert_eq!(source.publish_event(event(2, 10)), 1);
    assert_eq!(next_arrival(&mut arrivals).await, 2);
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert!(arrivals.try_recv().is_err(), "a notification went twice");
    assert_eq!(source.subscriptions().len(), 1);
}
