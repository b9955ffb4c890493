//! The source's bounds: a full source refuses with the version's fault, and a sink's queue
//! holds at most `queue_capacity` notifications (beyond it events are dropped for that sink
//! alone).

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use lather_envelope::{Envelope, FaultKind, Limits};
use lather_eventing::{EventSource, SourceSettings};
use std::net::SocketAddr;
use std::time::Duration;
use tokio::net::TcpListener;

const WSE04: &str = "http://schemas.xmlsoap.org/ws/2004/08/eventing";
const WSE11: &str = "http://www.w3.org/2011/03/ws-evt";
const WSA10: &str = "http://www.w3.org/2005/08/addressing";

fn parse(text: String) -> Envelope {
    Envelope::parse(Bytes::from(text), &Limits::default()).unwrap()
}

fn subscribe(wse: &str, notify: SocketAddr) -> Envelope {
    parse(format!(
        r#"<s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope"><s:Body><wse:Subscribe xmlns:wse="{wse}" xmlns:wsa="{WSA10}"><wse:Delivery><wse:NotifyTo><wsa:Address>http://{notify}/n</wsa:Address></wse:NotifyTo></wse:Delivery></wse:Subscribe></s:Body></s:Envelope>"#
    ))
}

fn event() -> Envelope {
    parse(
        r#"<s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope"><s:Body><e:Tick xmlns:e="urn:e"/></s:Body></s:Envelope>"#
            .to_owned(),
    )
}

/// A sink that takes `delay` to answer each message.
async fn slow_sink(delay: Duration) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let svc = hyper::service::service_fn(
                    move |req: http::Request<hyper::body::Incoming>| async move {
                        let _ = req.into_body().collect().await;
                        tokio::time::sleep(delay).await;
                        Ok::<_, std::convert::Infallible>(http::Response::new(Full::new(
                            Bytes::new(),
                        )))
                    },
                );
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), svc)
                    .await;
            });
        }
    });
    addr
}

#[tokio::test]
async fn a_full_source_refuses_in_each_version() {
    let source = EventSource::open(SourceSettings {
        max_subscriptions: 1,
        ..SourceSettings::allowing_loopback()
    })
    .unwrap();
    let sink = slow_sink(Duration::ZERO).await;
    source
        .handle(&subscribe(WSE04, sink), "http://h/e")
        .await
        .unwrap();
    let refused = source
        .handle(&subscribe(WSE04, sink), "http://h/e")
        .await
        .unwrap_err();
    assert_eq!(refused.kind(), FaultKind::EventSourceUnableToProcess);
    assert!(refused.reason().contains("maximum"), "{refused}");
    let refused = source
        .handle(&subscribe(WSE11, sink), "http://h/e")
        .await
        .unwrap_err();
    assert_eq!(refused.kind(), FaultKind::Internal);
    assert_eq!(source.subscriptions().len(), 1);
}

#[tokio::test]
async fn a_full_queue_drops_events_for_that_sink_only() {
    let source = EventSource::open(SourceSettings {
        queue_capacity: 2,
        ..SourceSettings::allowing_loopback()
    })
    .unwrap();
    let slow = slow_sink(Duration::from_secs(5)).await;
    let fast = slow_sink(Duration::ZERO).await;
    source
        .handle(&subscribe(WSE04, slow), "http://h/e")
        .await
        .unwrap();
    source
        .handle(&subscribe(WSE04, fast), "http://h/e")
        .await
        .unwrap();
    // The slow sink's task writes the first two events (its window is the queue's
    // capacity) and waits for their answers; two more fit in its queue; the rest are
    // dropped for it. The fast sink takes them all.
    let mut queued = Vec::new();
    for _ in 0..6 {
        queued.push(source.publish(&event(), None).unwrap());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(queued[0], 2);
    assert_eq!(queued.iter().sum::<usize>(), 6 + 4, "{queued:?}");
    assert_eq!(queued[5], 1, "{queued:?}");
}
