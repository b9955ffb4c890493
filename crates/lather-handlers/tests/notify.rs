//! `notify`: one SOAP 1.2 notification per message, POSTed to a real sink over a pooled
//! connection; a failing or absent sink is the handler's failure.

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use lather_envelope::{Element, Envelope, EnvelopeBuilder, FaultKind, Limits, QName, SoapVersion};
use lather_handlers::{NOTIFY_NS, Notify};
use lather_pipeline::{Access, Context, Direction, Handler, Message, Parts, Verdict};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::mpsc;

/// What the sink saw of one request.
#[derive(Debug)]
struct Received {
    method: String,
    path: String,
    content_type: String,
    body: Bytes,
}

/// A sink on 127.0.0.1 answering every POST with `status`; what it received, and how many
/// connections it accepted.
async fn sink(
    status: u16,
) -> (
    SocketAddr,
    mpsc::UnboundedReceiver<Received>,
    Arc<AtomicUsize>,
) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = mpsc::unbounded_channel();
    let connections = Arc::new(AtomicUsize::new(0));
    let accepted = connections.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            accepted.fetch_add(1, Ordering::SeqCst);
            let tx = tx.clone();
            tokio::spawn(async move {
                let service = service_fn(move |req: Request<Incoming>| {
                    let tx = tx.clone();
                    async move {
                        let (parts, body) = req.into_parts();
                        let body = body.collect().await.unwrap().to_bytes();
                        let header = |name| {
                            parts
                                .headers
                                .get(name)
                                .and_then(|v| v.to_str().ok())
                                .unwrap_or_default()
                                .to_owned()
                        };
                        let _ = tx.send(Received {
                            method: parts.method.to_string(),
                            path: parts.uri.path().to_owned(),
                            content_type: header(hyper::header::CONTENT_TYPE),
                            body,
                        });
                        let answer = Response::builder()
                            .status(status)
                            .body(Full::new(Bytes::from_static(b"ok")))
                            .unwrap();
                        Ok::<_, Infallible>(answer)
                    }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    (addr, rx, connections)
}

fn message(id: u128) -> Message {
    let bytes = EnvelopeBuilder::new(SoapVersion::V11)
        .body(r#"<m:Buy xmlns:m="urn:shop"><m:item>42</m:item></m:Buy>"#.into())
        .build();
    Message::new(
        Envelope::parse(bytes, &Limits::default()).unwrap(),
        Context {
            id,
            service: "orders".into(),
            direction: Direction::Request,
            ..Default::default()
        },
    )
}

fn notify(url: &str) -> Notify {
    Notify::new(url, Duration::from_secs(5)).unwrap()
}

#[tokio::test]
async fn each_message_is_notified_over_one_kept_alive_connection() {
    let (addr, mut received, connections) = sink(200).await;
    let url = format!("http://{addr}/events/in");
    let h = notify(&url);
    for id in [0xabc_u128, 0xdef] {
        let verdict = h.call(&message(id)).await;
        assert!(
            matches!(&verdict, Verdict::Continue(p) if p.is_empty()),
            "{verdict:?}"
        );
    }
    for id in [0xabc_u128, 0xdef] {
        let got = received.recv().await.unwrap();
        assert_eq!(got.method, "POST");
        assert_eq!(got.path, "/events/in");
        assert!(
            got.content_type.starts_with("application/soap+xml")
                && got.content_type.contains("action=\"urn:lather:notify\""),
            "{}",
            got.content_type
        );
        let envelope = Envelope::parse(got.body.clone(), &Limits::default()).unwrap();
        assert_eq!(envelope.version(), SoapVersion::V12);
        let action = envelope
            .header(&QName::new(
                "http://www.w3.org/2005/08/addressing",
                "Action",
            ))
            .unwrap();
        assert_eq!(
            envelope.header_text(action).as_deref(),
            Some("urn:lather:notify")
        );
        let to = envelope
            .header(&QName::new("http://www.w3.org/2005/08/addressing", "To"))
            .unwrap();
        assert_eq!(envelope.header_text(to).as_deref(), Some(url.as_str()));
        let notice =
            Element::parse(&envelope.extract_payload().unwrap(), &Limits::default()).unwrap();
        assert_eq!(notice.name(), &QName::new(NOTIFY_NS, "Notify"));
        let field = |local| notice.child(&QName::new(NOTIFY_NS, local)).unwrap();
        assert_eq!(field("MessageId").text(), format!("{id:032x}"));
        assert_eq!(field("Service").text(), "orders");
        assert_eq!(field("Flow").text(), "request");
        let operation = field("Operation");
        assert_eq!(
            operation.resolve_qname(&operation.text()),
            Some(QName::new("urn:shop", "Buy"))
        );
        let time = field("Time").text();
        assert!(
            time.len() == 24 && time.ends_with('Z') && time.as_bytes()[10] == b'T',
            "{time}"
        );
    }
    assert_eq!(
        connections.load(Ordering::SeqCst),
        1,
        "the connection is reused"
    );
}

#[tokio::test]
async fn a_sink_answering_500_is_a_failure() {
    let (addr, mut received, _) = sink(500).await;
    let h = notify(&format!("http://{addr}/"));
    let Verdict::Fault(fault) = h.call(&message(1)).await else {
        panic!("expected a fault");
    };
    assert_eq!(fault.kind(), FaultKind::HandlerFailed);
    assert!(fault.reason().contains("500"), "{}", fault.reason());
    assert!(received.recv().await.is_some(), "the sink was asked");
}

#[tokio::test]
async fn an_unreachable_sink_is_a_failure() {
    let port = {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        listener.local_addr().unwrap().port()
    };
    let h = notify(&format!("http://127.0.0.1:{port}/gone"));
    let Verdict::Fault(fault) = h.call(&message(1)).await else {
        panic!("expected a fault");
    };
    assert_eq!(fault.kind(), FaultKind::HandlerFailed);
    assert!(
        fault.reason().contains(&format!("127.0.0.1:{port}")),
        "{}",
        fault.reason()
    );
}

#[test]
fn only_http_and_https_sinks_are_accepted() {
    let timeout = Duration::from_secs(1);
    for (sink, why) in [
        ("ftp://example.org/x", "http://"),
        ("/relative/path", "http://"),
        ("http://user:pw@example.org/x", "user information"),
        ("not a url", "not a URL"),
    ] {
        let err = Notify::new(sink, timeout).unwrap_err().to_string();
        assert!(err.contains(why), "{sink}: {err}");
    }
    let ok = Notify::new("http://127.0.0.1:9/x", timeout).unwrap();
    assert_eq!(ok.access(), Access::read_only(Parts::none().body()));
    assert!(Notify::new("https://example.org/x", timeout).is_ok());
}
