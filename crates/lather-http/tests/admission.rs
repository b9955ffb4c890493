//! Admission at the HTTP edge: a full queue answers 503 Server busy at once, and waiting
//! requests are served highest priority first.

mod support;

use http::StatusCode;
use lather_envelope::{FaultKind, SoapVersion};
use std::time::Duration;
use support::*;

fn config(millis: u64, capacity: usize) -> String {
    format!(
        "[server]\nlisten = \"127.0.0.1:0\"\nqueue_capacity = {capacity}\nmax_in_flight = 1\n\
         [handlers.hold]\nkind = \"sleep\"\nmillis = {millis}\n\
         [[service]]\nname = \"echo\"\npath = \"/echo\"\nbuiltin = \"echo\"\nrequest = [[\"hold\"]]\n"
    )
}

fn request(
    addr: std::net::SocketAddr,
    priority: Option<&'static str>,
) -> http::Request<http_body_util::Full<bytes::Bytes>> {
    let mut req = soap_request(
        addr,
        "/echo",
        SoapVersion::V11,
        envelope(SoapVersion::V11, "", ECHO_PAYLOAD),
    );
    if let Some(p) = priority {
        req.headers_mut()
            .insert("lather-priority", p.parse().unwrap());
    }
    req
}

#[tokio::test]
async fn a_full_queue_is_refused_at_once_with_503_and_retry_after() {
    let s = TestServer::start(&config(400, 1)).await;
    let addr = s.addr;
    let first = tokio::spawn(async move { send(addr, request(addr, None)).await });
    tokio::time::sleep(Duration::from_millis(100)).await;
    let second = tokio::spawn(async move { send(addr, request(addr, None)).await });
    tokio::time::sleep(Duration::from_millis(100)).await;
    // One in flight, one waiting: the third is refused without waiting for either.
    let refused = tokio::time::timeout(Duration::from_millis(250), send(addr, request(addr, None)))
        .await
        .expect("the refusal waited for the queue");
    refused.assert_fault(FaultKind::ServerBusy, SoapVersion::V11);
    assert_eq!(refused.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(refused.headers["retry-after"], "1");
    assert!(
        refused.text().contains("1 in flight and 1 waiting"),
        "{}",
        refused.text()
    );
    assert_eq!(first.await.unwrap().status, StatusCode::OK);
    assert_eq!(second.await.unwrap().status, StatusCode::OK);
    let text = get(addr, "/metrics").await.text().to_owned();
    assert_eq!(
        metric(&text, r#"lather_admission_refused_total{service="echo"}"#),
        Some(1.0),
        "{text}"
    );
}

#[tokio::test]
async fn waiting_requests_are_served_highest_priority_first() {
    let s = TestServer::start(&config(400, 16)).await;
    let addr = s.addr;
    let order = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let blocker = tokio::spawn(async move { send(addr, request(addr, None)).await });
    tokio::time::sleep(Duration::from_millis(50)).await;
    let mut waiting = Vec::new();
    for (name, priority) in [
        ("low", Some("low")),
        ("normal", None),
        ("high", Some("HIGH")),
    ] {
        let order = order.clone();
        waiting.push(tokio::spawn(async move {
            let answer = send(addr, request(addr, priority)).await;
            order.lock().unwrap().push(name);
            answer.status
        }));
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(blocker.await.unwrap().status, StatusCode::OK);
    for w in waiting {
        assert_eq!(w.await.unwrap(), StatusCode::OK);
    }
    assert_eq!(*order.lock().unwrap(), ["high", "normal", "low"]);
}
