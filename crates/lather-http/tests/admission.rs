//! Admission at the HTTP edge: a full queue answers 503 Server busy at once, and waiting
//! requests are served highest priority first.

use crate::support;

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

/// Issue 10 A: clients that give up while waiting (or just after being granted a slot) must
/// not leak slots. Before the fix, a service in this state answered 503 forever.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_that_give_up_leak_no_slot_and_the_service_recovers() {
    let s = TestServer::start(&config(10, 1024)).await;
    let addr = s.addr;
    // 300 requests from 60 clients, each giving up after 50 ms: most of them while queued,
    // some just as a slot is handed to them.
    let mut clients = Vec::new();
    for _ in 0..60 {
        clients.push(tokio::spawn(async move {
            let mut answered = 0;
            for _ in 0..5 {
                let attempt = send(addr, request(addr, None));
                if tokio::time::timeout(Duration::from_millis(50), attempt)
                    .await
                    .is_ok()
                {
                    answered += 1;
                }
            }
            answered
        }));
    }
    let mut answered = 0;
    for c in clients {
        answered += c.await.unwrap();
    }
    assert!(answered < 300, "nobody gave up: the test proves nothing");
    // Once the abandoned requests are gone, the gate is empty again...
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let text = get(addr, "/metrics").await.text().to_owned();
        let in_flight = metric(&text, r#"lather_admission_in_flight{service="echo"}"#);
        let queued = metric(&text, r#"lather_admission_queued{service="echo"}"#);
        if (in_flight, queued) == (Some(0.0), Some(0.0)) {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the gate still holds {in_flight:?} in flight and {queued:?} queued:\n{text}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // ...and a normal request is served.
    let answer = tokio::time::timeout(Duration::from_secs(10), send(addr, request(addr, None)))
        .await
        .expect("a request after the load was not answered");
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.text());
}
