//! Helpers for the delivery tests: a raw TCP sink that keeps each connection's bytes
//! apart, a frame reader, Subscribe envelopes, an HTTP sink, a short retry budget and the
//! SubscriptionEnd that follows its failure.

#![allow(dead_code)]

use bytes::Bytes;
use lather_envelope::{Envelope, Limits};
use lather_eventing::{Event, EventHeader, RetryPolicy};
use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::AsyncReadExt;
use tokio::net::TcpListener;
use tokio::sync::mpsc;

pub(crate) const WSE04: &str = "http://schemas.xmlsoap.org/ws/2004/08/eventing";
pub(crate) const WSE11: &str = "http://www.w3.org/2011/03/ws-evt";
pub(crate) const WSA10: &str = "http://www.w3.org/2005/08/addressing";

/// What a raw TCP sink saw: a connection's bytes (`Data(connection, bytes)`) or its end.
#[derive(Debug)]
pub(crate) enum Seen {
    Data(usize, Vec<u8>),
    Closed(usize),
}

/// A TCP sink reading every connection (numbered from 0 in accept order) to its end.
pub(crate) async fn raw_sink() -> (SocketAddr, mpsc::UnboundedReceiver<Seen>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        let mut number = 0;
        while let Ok((mut stream, _)) = listener.accept().await {
            let tx = tx.clone();
            let n = number;
            number += 1;
            tokio::spawn(async move {
                let mut buf = vec![0u8; 64 * 1024];
                loop {
                    match stream.read(&mut buf).await {
                        Ok(0) | Err(_) => {
                            let _ = tx.send(Seen::Closed(n));
                            return;
                        }
                        Ok(k) => {
                            if tx.send(Seen::Data(n, buf[..k].to_vec())).is_err() {
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

/// Everything the sink gets on its connections until `connections` of them closed
/// (within 10 s): each connection's bytes, in accept order.
pub(crate) async fn until_closed(
    rx: &mut mpsc::UnboundedReceiver<Seen>,
    connections: usize,
) -> Vec<Vec<u8>> {
    let mut bytes: Vec<Vec<u8>> = Vec::new();
    let mut closed = 0;
    while closed < connections {
        let seen = tokio::time::timeout(Duration::from_secs(10), rx.recv())
            .await
            .expect("the connections close in time")
            .expect("sink open");
        match seen {
            Seen::Data(n, data) => {
                if bytes.len() <= n {
                    bytes.resize(n + 1, Vec::new());
                }
                bytes[n].extend_from_slice(&data);
            }
            Seen::Closed(_) => closed += 1,
        }
    }
    bytes
}

/// Reads from `rx` (any connection) until `split` yields `count` frames.
pub(crate) async fn frames<T>(
    rx: &mut mpsc::UnboundedReceiver<Seen>,
    count: usize,
    split: impl Fn(&[u8]) -> Option<(T, usize)>,
) -> Vec<T> {
    let mut buf = Vec::new();
    let mut out = Vec::new();
    loop {
        while let Some((frame, used)) = split(&buf) {
            out.push(frame);
            buf.drain(..used);
        }
        if out.len() >= count {
            return out;
        }
        let seen = tokio::time::timeout(Duration::from_secs(10), rx.recv())
            .await
            .expect("frames in time")
            .expect("sink open");
        if let Seen::Data(_, data) = seen {
            buf.extend_from_slice(&data);
        }
    }
}

/// A SOAP 1.2 Subscribe in `wse` with NotifyTo `notify` (reference parameter
/// `<k:Key xmlns:k="urn:k">42</k:Key>`), EndTo `end_to` (if any) and `extra` Subscribe
/// children after Delivery; `delivery_extra` goes inside Delivery.
pub(crate) fn subscribe(
    wse: &str,
    notify: &str,
    end_to: Option<&str>,
    delivery_extra: &str,
    extra: &str,
) -> Envelope {
    let end_to = end_to.map_or(String::new(), |a| {
        format!("<wse:EndTo><wsa:Address>{a}</wsa:Address></wse:EndTo>")
    });
    let text = format!(
        r#"<s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope"><s:Body><wse:Subscribe xmlns:wse="{wse}" xmlns:wsa="{WSA10}">{end_to}<wse:Delivery><wse:NotifyTo><wsa:Address>{notify}</wsa:Address><wsa:ReferenceParameters><k:Key xmlns:k="urn:k">42</k:Key></wsa:ReferenceParameters></wse:NotifyTo>{delivery_extra}</wse:Delivery>{extra}</wse:Subscribe></s:Body></s:Envelope>"#
    );
    Envelope::parse(Bytes::from(text), &Limits::default()).unwrap()
}

/// The event `<q:Quote xmlns:q="urn:q" n="{n}">` with `filler` bytes of text, action
/// `urn:q:Quote`.
pub(crate) fn event(n: u32, filler: usize) -> Event {
    Event {
        payload: payload(n, filler),
        action: Some("urn:q:Quote".into()),
        topics: vec!["{urn:q}Quote".into()],
        headers: vec![EventHeader {
            namespace: "urn:auth".into(),
            local: "Auth".into(),
            text: "tok".into(),
        }],
    }
}

/// The payload of `event(n, filler)`.
pub(crate) fn payload(n: u32, filler: usize) -> Bytes {
    Bytes::from(format!(
        r#"<q:Quote xmlns:q="urn:q" n="{n}">{}</q:Quote>"#,
        "ab".repeat(filler / 2)
    ))
}

/// The parsed envelope of `bytes`.
pub(crate) fn envelope(bytes: &[u8]) -> Envelope {
    Envelope::parse(Bytes::copy_from_slice(bytes), &Limits::default()).unwrap()
}

/// The address of a port nothing listens on.
pub(crate) async fn dead_address() -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    l.local_addr().unwrap()
}

/// Whether `body` is `event(n, filler)`'s payload, as sent or as extracted from a Body
/// (which may add the envelope's namespace declarations to its start tag).
pub(crate) fn is_event(body: &[u8], n: u32, filler: usize) -> bool {
    let text = String::from_utf8_lossy(body);
    let content = format!(r#"n="{n}">{}</q:Quote>"#, "ab".repeat(filler / 2));
    text.starts_with("<q:Quote ") && text.ends_with(&content) && text.contains(r#"xmlns:q="urn:q""#)
}

/// An HTTP sink answering 202 and sending each body down the channel.
pub(crate) async fn http_sink() -> (SocketAddr, mpsc::UnboundedReceiver<String>) {
    use http_body_util::BodyExt;
    let (tx, rx) = mpsc::unbounded_channel();
    let addr = lather_test_util::http::serve(move |req: http::Request<hyper::body::Incoming>| {
        let tx = tx.clone();
        async move {
            let body = req.into_body().collect().await.unwrap().to_bytes();
            let _ = tx.send(String::from_utf8(body.to_vec()).unwrap());
            lather_test_util::http::empty(http::StatusCode::ACCEPTED)
        }
    })
    .await;
    (addr, rx)
}

/// Two connections per notification at most, soon given up.
pub(crate) fn two_attempts() -> RetryPolicy {
    RetryPolicy {
        attempts: 2,
        first_backoff: Duration::from_millis(20),
        timeout: Duration::from_millis(500),
    }
}

/// The next SubscriptionEnd `ends` receives (within 10 s), which must say DeliveryFailure.
pub(crate) async fn delivery_failure(ends: &mut mpsc::UnboundedReceiver<String>) -> String {
    let end = tokio::time::timeout(Duration::from_secs(10), ends.recv())
        .await
        .expect("SubscriptionEnd in time")
        .unwrap();
    assert!(
        end.contains(&format!("<wse:Status>{WSE11}/DeliveryFailure</wse:Status>")),
        "{end}"
    );
    end
}

/// Waits (at most 10 s) until `done` holds.
pub(crate) async fn until(what: &str, done: impl Fn() -> bool) {
    let waited = tokio::time::timeout(Duration::from_secs(10), async {
        while !done() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(waited.is_ok(), "not within 10 s: {what}");
}
