//! Delivery's bounds over real loopback sockets: the source refuses a publish beyond its
//! byte bound; a sink that takes bytes but never reads gets exactly the retry budget's
//! connections, and so does one that answers more requests than it was sent; an expired
//! subscription's delivery task ends; what a sink answered stops counting against its
//! bounds while its connection is replaced.

use crate::support::{delivery_failure, http_sink, two_attempts, until};
use bytes::Bytes;
use lather_envelope::{Envelope, FaultKind, Limits, SoapVersion};
use lather_eventing::{Event, EventSource, LATHER_EVENTING_NS, SourceSettings};
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio::net::TcpListener;

const WSE11: &str = "http://www.w3.org/2011/03/ws-evt";
const WSA10: &str = "http://www.w3.org/2005/08/addressing";

fn subscribe(notify: &str, end_to: Option<SocketAddr>, expires: Option<&str>) -> Envelope {
    let end_to = end_to.map_or(String::new(), |a| {
        format!("<wse:EndTo><wsa:Address>http://{a}/end</wsa:Address></wse:EndTo>")
    });
    let expires = expires.map_or(String::new(), |e| format!("<wse:Expires>{e}</wse:Expires>"));
    let text = format!(
        r#"<s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope"><s:Body><wse:Subscribe xmlns:wse="{WSE11}" xmlns:wsa="{WSA10}">{end_to}<wse:Delivery><wse:NotifyTo><wsa:Address>{notify}</wsa:Address></wse:NotifyTo></wse:Delivery>{expires}</wse:Subscribe></s:Body></s:Envelope>"#
    );
    Envelope::parse(Bytes::from(text), &Limits::default()).unwrap()
}

/// Subscribes `notify` to `source` for good (no EndTo, no expiry).
async fn subscribed(source: &EventSource, notify: &str) {
    source
        .handle(&subscribe(notify, None, None), "http://h/e")
        .await
        .unwrap();
}

fn event(bytes: usize) -> Event {
    Event {
        payload: Bytes::from(format!(
            r#"<q:Big xmlns:q="urn:q">{}</q:Big>"#,
            "x".repeat(bytes)
        )),
        action: Some("urn:q:Big".into()),
        topics: Vec::new(),
        headers: Vec::new(),
    }
}

/// A sink that accepts every connection and never reads from it; counts the connections.
async fn mute_sink() -> (SocketAddr, Arc<AtomicUsize>, tokio::task::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let accepted = Arc::new(AtomicUsize::new(0));
    let count = accepted.clone();
    let held = tokio::spawn(async move {
        let mut kept = Vec::new();
        while let Ok((s, _)) = listener.accept().await {
            count.fetch_add(1, Ordering::SeqCst);
            kept.push(s);
        }
    });
    (addr, accepted, held)
}

#[tokio::test]
async fn a_publish_beyond_the_source_s_byte_bound_is_refused() {
    let source = EventSource::open(SourceSettings {
        queue_bytes_total: 1024 * 1024,
        ..SourceSettings::allowing_loopback()
    })
    .unwrap();
    let (addr, _, held) = mute_sink().await;
    subscribed(&source, &format!("http://{addr}/n")).await;
    // 200 KiB events that are never answered: five fit under 1 MiB, the sixth does not.
    for _ in 0..5 {
        assert_eq!(source.try_publish_event(event(200 * 1024)).unwrap(), 1);
    }
    let refused = source.try_publish_event(event(200 * 1024)).unwrap_err();
    assert_eq!(refused.kind(), FaultKind::PublishQueueFull);
    assert_eq!(refused.http_status(SoapVersion::V12), 503);
    assert!(refused.reason().contains("queue_bytes_total"), "{refused}");
    assert_eq!(source.refused_publishes(), 1);
    assert!(source.queued_bytes() <= 1024 * 1024);
    // Small events still fit.
    assert_eq!(source.try_publish_event(event(10)).unwrap(), 1);
    held.abort();
}

#[tokio::test]
async fn a_sink_that_never_reads_gets_exactly_the_budgeted_connections() {
    for scheme in ["lather.bin", "soap.tcp"] {
        let source = EventSource::open(SourceSettings {
            retry: two_attempts(),
            sink_queue_bytes: 64 * 1024 * 1024,
            ..SourceSettings::allowing_loopback()
        })
        .unwrap();
        let (addr, accepted, held) = mute_sink().await;
        let (end_to, mut ends) = http_sink().await;
        source
            .handle(
                &subscribe(&format!("{scheme}://{addr}"), Some(end_to), None),
                "http://h/e",
            )
            .await
            .unwrap();
        // 48 MiB: far more than the socket buffers of several loopback connections hold,
        // so each new connection fills up and stalls in turn.
        for _ in 0..192 {
            assert_eq!(source.publish_event(event(256 * 1024)), 1);
        }
        delivery_failure(&mut ends).await;
        assert_eq!(accepted.load(Ordering::SeqCst), 2, "{scheme}: connections");
        assert!(source.subscriptions().is_empty());
        until("the delivery task ends", || source.delivery_tasks() == 0).await;
        until("the queued events are let go", || {
            source.queued_bytes() == 0
        })
        .await;
        // No further attempt comes later.
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_eq!(accepted.load(Ordering::SeqCst), 2, "{scheme}: connections");
        held.abort();
    }
}

#[tokio::test]
async fn the_delivery_task_of_an_ended_subscription_ends_with_it() {
    // The default write bound (10 s) and retries: unstopped, the stuck task would live on
    // for 40 s and more after its subscription.
    let source = EventSource::open(SourceSettings {
        sink_queue_bytes: 64 * 1024 * 1024,
        ..SourceSettings::allowing_loopback()
    })
    .unwrap();
    let (addr, accepted, held) = mute_sink().await;
    source
        .handle(
            &subscribe(&format!("lather.bin://{addr}"), None, Some("PT1S")),
            "http://h/e",
        )
        .await
        .unwrap();
    let (http_addr, http_accepted, http_held) = mute_sink().await;
    let unsubscribed = source
        .handle(
            &subscribe(&format!("http://{http_addr}/n"), None, None),
            "http://h/e",
        )
        .await
        .unwrap();
    assert_eq!(source.delivery_tasks(), 2);
    for _ in 0..64 {
        assert_eq!(source.publish_event(event(256 * 1024)), 2);
    }
    until("both sinks connected", || {
        accepted.load(Ordering::SeqCst) == 1 && http_accepted.load(Ordering::SeqCst) == 1
    })
    .await;
    // Unsubscribe the HTTP one: its task stops at once.
    let text = String::from_utf8_lossy(&unsubscribed).into_owned();
    let id = text
        .split("Identifier")
        .nth(1)
        .and_then(|rest| rest.split('>').nth(1))
        .and_then(|rest| rest.split('<').next())
        .expect("an identifier")
        .to_owned();
    let unsubscribe = format!(
        r#"<s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope" xmlns:wsa="{WSA10}"><s:Header><lev:Identifier xmlns:lev="{LATHER_EVENTING_NS}">{id}</lev:Identifier></s:Header><s:Body><wse:Unsubscribe xmlns:wse="{WSE11}"/></s:Body></s:Envelope>"#
    );
    source
        .handle(
            &Envelope::parse(Bytes::from(unsubscribe), &Limits::default()).unwrap(),
            "http://h/e",
        )
        .await
        .unwrap();
    until("the unsubscribed task ends", || {
        source.delivery_tasks() == 1
    })
    .await;
    // The other expires after 1 s: its task, stuck writing, ends with it.
    until("the expired task ends", || source.delivery_tasks() == 0).await;
    assert!(source.subscriptions().is_empty());
    until("the queued events are let go", || {
        source.queued_bytes() == 0
    })
    .await;
    held.abort();
    http_held.abort();
}

#[tokio::test]
async fn a_sink_over_its_byte_bound_drops_events_for_itself_and_counts_them() {
    let source = EventSource::open(SourceSettings {
        sink_queue_bytes: 1024 * 1024,
        ..SourceSettings::allowing_loopback()
    })
    .unwrap();
    let (mute, _, held) = mute_sink().await;
    let (other, _, other_held) = mute_sink().await;
    source
        .handle(
            &subscribe(&format!("http://{mute}/n"), None, None),
            "http://h/e",
        )
        .await
        .unwrap();
    // Each sink counts its own bytes against the bound.
    source
        .handle(
            &subscribe(&format!("http://{other}/n"), None, None),
            "http://h/e",
        )
        .await
        .unwrap();
    let mut counts = Vec::new();
    for _ in 0..20 {
        counts.push(source.try_publish_event(event(200 * 1024)).unwrap());
    }
    // 1 MiB holds five 200 KiB events per sink; the rest are dropped, per sink, counted.
    let queued: usize = counts.iter().sum();
    assert!((2 * 5..2 * 20).contains(&queued), "{counts:?}");
    assert_eq!(source.dropped_notifications(), (2 * 20 - queued) as u64);
    // The source is not refused: each event is held once, far below queue_bytes_total.
    assert_eq!(source.refused_publishes(), 0);
    held.abort();
    other_held.abort();
}

/// An HTTP sink that answers each notification twice (both answers in one write, once the
/// notification has come whole); counts the connections.
async fn double_answering_sink() -> (SocketAddr, Arc<AtomicUsize>, tokio::task::JoinHandle<()>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let accepted = Arc::new(AtomicUsize::new(0));
    let count = accepted.clone();
    let held = tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            count.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                let mut got = Vec::new();
                let mut buf = [0u8; 4096];
                loop {
                    match s.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => got.extend_from_slice(&buf[..n]),
                    }
                    while let Some(end) = got
                        .windows(b"</s:Envelope>".len())
                        .position(|w| w == b"</s:Envelope>")
                    {
                        got.drain(..end + b"</s:Envelope>".len());
                        let ok = b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n";
                        if s.write_all(&[&ok[..], &ok[..]].concat()).await.is_err() {
                            return;
                        }
                    }
                }
            });
        }
    });
    (addr, accepted, held)
}

#[tokio::test]
async fn a_sink_answering_more_requests_than_it_was_sent_is_given_up_after_the_budget() {
    let source = EventSource::open(SourceSettings {
        retry: two_attempts(),
        ..SourceSettings::allowing_loopback()
    })
    .unwrap();
    let (addr, accepted, held) = double_answering_sink().await;
    let (end_to, mut ends) = http_sink().await;
    source
        .handle(
            &subscribe(&format!("http://{addr}/n"), Some(end_to), None),
            "http://h/e",
        )
        .await
        .unwrap();
    assert_eq!(source.publish_event(event(100)), 1);
    // Its answers cannot be matched to notifications any more: each connection is given
    // up at its first answers, the notification sent again on the next, until the retry
    // budget is spent.
    let end = delivery_failure(&mut ends).await;
    assert!(
        end.contains("answered 2 requests with 1 of them unanswered"),
        "{end}"
    );
    assert_eq!(accepted.load(Ordering::SeqCst), 2, "connections");
    held.abort();
}

/// A sink that takes one connection, reads two notifications, answers the first with
/// `Connection: close` and goes away (further connections are refused); says when it has.
async fn closing_sink() -> (SocketAddr, tokio::sync::oneshot::Receiver<()>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (gone, gone_rx) = tokio::sync::oneshot::channel();
    tokio::spawn(async move {
        let (mut s, _) = listener.accept().await.unwrap();
        drop(listener);
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        while got
            .windows(b"</s:Envelope>".len())
            .filter(|w| *w == b"</s:Envelope>")
            .count()
            < 2
        {
            match s.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => got.extend_from_slice(&buf[..n]),
            }
        }
        let closing = b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
        let _ = s.write_all(closing).await;
        let _ = s.shutdown().await;
        drop(s);
        let _ = gone.send(());
    });
    (addr, gone_rx)
}

#[tokio::test]
async fn what_a_sink_answered_stops_counting_while_its_connection_is_replaced() {
    let source = EventSource::open(SourceSettings {
        // Retried for longer than the test waits: the sink stays being replaced.
        retry: lather_eventing::RetryPolicy {
            attempts: 50,
            first_backoff: Duration::from_millis(500),
            timeout: Duration::from_secs(2),
        },
        ..SourceSettings::allowing_loopback()
    })
    .unwrap();
    let (addr, gone) = closing_sink().await;
    subscribed(&source, &format!("http://{addr}/n")).await;
    // Both queued before the delivery task runs: one write of two requests.
    assert_eq!(source.publish_event(event(100)), 1);
    assert_eq!(source.publish_event(event(100)), 1);
    tokio::time::timeout(Duration::from_secs(10), gone)
        .await
        .expect("the sink answered in time")
        .unwrap();
    // The first is answered; the second waits for a connection that is refused, with
    // backoff: only it still counts.
    until("the answered notification let go", || {
        source.sink_depths().queued_notifications == 1
    })
    .await;
    assert_eq!(source.sink_depths().subscriptions, 1, "still being retried");
}
