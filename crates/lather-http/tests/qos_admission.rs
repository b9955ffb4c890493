//! WS-QoS at admission, over real sockets: a request's traffic class (stated in its QoS
//! header, or given by a `[[qos.client]]` rule) chooses the queue it waits in; a class
//! stated by a client its `allow` does not list counts for nothing; a request stating a
//! response time is refused with `ResponseTimeUnattainable` when that time passes while it
//! waits, and served when it is admitted in time.

use crate::support;

use http::StatusCode;
use lather_envelope::{FaultKind, SoapVersion};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use support::*;

/// One request in flight at a time, each held `millis`; the classes given in `qos`.
fn config(millis: u64, qos: &str) -> String {
    format!(
        "[server]\nlisten = \"127.0.0.1:0\"\nqueue_capacity = 16\nmax_in_flight = 1\n{qos}\
         [handlers.hold]\nkind = \"sleep\"\nmillis = {millis}\n\
         [[service]]\nname = \"echo\"\npath = \"/echo\"\nbuiltin = \"echo\"\nrequest = [[\"hold\"]]\n"
    )
}

const CLASSES: &str = "[qos.class.gold]\npriority = \"high\"\n\
                       [qos.class.bulk]\npriority = \"low\"\n\
                       [qos.class.vip]\npriority = \"high\"\nallow = [\"10.0.0.0/8\"]\n";

/// An echo request whose QoS header states `class` and `ms` (a header only when either).
fn request(
    addr: std::net::SocketAddr,
    class: Option<&str>,
    ms: Option<u64>,
) -> http::Request<http_body_util::Full<bytes::Bytes>> {
    let mut inner = String::new();
    if let Some(c) = class {
        inner.push_str(&format!("<q:TrafficClass>{c}</q:TrafficClass>"));
    }
    if let Some(ms) = ms {
        inner.push_str(&format!("<q:ResponseTimeMs>{ms}</q:ResponseTimeMs>"));
    }
    let header = if inner.is_empty() {
        String::new()
    } else {
        format!(r#"<q:QoS xmlns:q="urn:lather:qos">{inner}</q:QoS>"#)
    };
    soap_request(
        addr,
        "/echo",
        SoapVersion::V11,
        envelope(SoapVersion::V11, &header, ECHO_PAYLOAD),
    )
}

/// Holds the one slot with a request, then queues one request per `(name, class)` in that
/// order and returns the names in the order they were answered.
async fn served_order(
    addr: std::net::SocketAddr,
    waiting: &[(&'static str, Option<&'static str>)],
) -> Vec<&'static str> {
    let order = Arc::new(Mutex::new(Vec::new()));
    let blocker = tokio::spawn(async move { send(addr, request(addr, None, None)).await });
    tokio::time::sleep(Duration::from_millis(50)).await;
    let mut tasks = Vec::new();
    for &(name, class) in waiting {
        let order = order.clone();
        tasks.push(tokio::spawn(async move {
            let answer = send(addr, request(addr, class, None)).await;
            order.lock().unwrap().push(name);
            answer.status
        }));
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(blocker.await.unwrap().status, StatusCode::OK);
    for t in tasks {
        assert_eq!(t.await.unwrap(), StatusCode::OK);
    }
    order.lock().unwrap().clone()
}

#[tokio::test]
async fn the_stated_class_chooses_the_admission_queue() {
    let s = TestServer::start(&config(300, CLASSES)).await;
    let order = served_order(
        s.addr,
        &[
            ("bulk", Some("bulk")),
            ("plain", None),
            ("gold", Some("gold")),
        ],
    )
    .await;
    assert_eq!(order, ["gold", "plain", "bulk"]);
}

#[tokio::test]
async fn a_class_the_client_may_not_state_counts_for_nothing() {
    // vip is high, but only for 10.0.0.0/8: from loopback it is as if no class was stated,
    // so the vip request keeps its place behind the earlier normal one.
    let s = TestServer::start(&config(300, CLASSES)).await;
    let order = served_order(s.addr, &[("plain", None), ("vip", Some("vip"))]).await;
    assert_eq!(order, ["plain", "vip"]);
}

#[tokio::test]
async fn a_client_rule_gives_a_class_to_clients_without_the_header() {
    let rules = format!(
        "{CLASSES}[[qos.client]]\naddress = \"127.0.0.0/8\"\npath = \"/echo\"\nclass = \"bulk\"\n"
    );
    let s = TestServer::start(&config(300, &rules)).await;
    // Every loopback client is bulk (low) unless it states a class: the gold one goes first
    // and the rest keep their order.
    let order = served_order(
        s.addr,
        &[("first", None), ("second", None), ("gold", Some("gold"))],
    )
    .await;
    assert_eq!(order, ["gold", "first", "second"]);
}

#[tokio::test]
async fn a_stated_response_time_that_passes_in_the_queue_is_refused() {
    let s = TestServer::start(&config(600, "")).await;
    let addr = s.addr;
    let blocker = tokio::spawn(async move { send(addr, request(addr, None, None)).await });
    tokio::time::sleep(Duration::from_millis(50)).await;
    // 100 ms is less than the 550 ms left of the request in flight: refused, and soon.
    let started = std::time::Instant::now();
    let late = send(addr, request(addr, None, Some(100))).await;
    late.assert_fault(FaultKind::ResponseTimeUnattainable, SoapVersion::V11);
    assert_eq!(late.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(late.headers["retry-after"], "1");
    assert!(
        late.text().contains("q:ResponseTimeMs 100"),
        "{}",
        late.text()
    );
    assert!(
        started.elapsed() < Duration::from_millis(500),
        "it waited its turn"
    );
    // 5 s is enough to wait for the slot: served.
    let patient = send(addr, request(addr, None, Some(5_000))).await;
    assert_eq!(patient.status, StatusCode::OK, "{}", patient.text());
    assert_eq!(blocker.await.unwrap().status, StatusCode::OK);
    // Admitted at once, a short bound is no obstacle (it bounds the wait, not the work).
    let quick = send(addr, request(addr, None, Some(1))).await;
    assert_eq!(quick.status, StatusCode::OK, "{}", quick.text());
}

#[tokio::test]
async fn a_bad_header_is_refused_before_admission() {
    let s = TestServer::start(&config(800, CLASSES)).await;
    let addr = s.addr;
    // The one slot is held for 800 ms: a fault read after admission would wait for it.
    let blocker = tokio::spawn(async move { send(addr, request(addr, None, None)).await });
    tokio::time::sleep(Duration::from_millis(50)).await;
    let body = envelope(
        SoapVersion::V11,
        r#"<q:QoS xmlns:q="urn:lather:qos"><q:ResponseTimeMs>soon</q:ResponseTimeMs></q:QoS>"#,
        ECHO_PAYLOAD,
    );
    let started = std::time::Instant::now();
    let answer = send(addr, soap_request(addr, "/echo", SoapVersion::V11, body)).await;
    answer.assert_fault(FaultKind::InvalidQosRequirements, SoapVersion::V11);
    assert!(
        started.elapsed() < Duration::from_millis(500),
        "the fault waited for admission"
    );
    assert_eq!(blocker.await.unwrap().status, StatusCode::OK);
}

#[tokio::test]
async fn where_classes_rank_the_priority_header_cannot_lift_a_request() {
    // Classes set priorities: `lather-priority: high` counts as normal, so neither it nor
    // a class the client may not state (vip) gets ahead of an earlier plain request; the
    // header can still lower one.
    let s = TestServer::start(&config(300, CLASSES)).await;
    let addr = s.addr;
    let order = Arc::new(Mutex::new(Vec::new()));
    let blocker = tokio::spawn(async move { send(addr, request(addr, None, None)).await });
    tokio::time::sleep(Duration::from_millis(50)).await;
    let mut tasks = Vec::new();
    for (name, class, header) in [
        ("lowered", None, Some("low")),
        ("plain", None, None),
        ("header-high", None, Some("high")),
        ("vip-and-high", Some("vip"), Some("high")),
    ] {
        let order = order.clone();
        tasks.push(tokio::spawn(async move {
            let mut req = request(addr, class, None);
            if let Some(h) = header {
                req.headers_mut()
                    .insert("lather-priority", h.parse().unwrap());
            }
            let answer = send(addr, req).await;
            order.lock().unwrap().push(name);
            answer.status
        }));
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(blocker.await.unwrap().status, StatusCode::OK);
    for t in tasks {
        assert_eq!(t.await.unwrap(), StatusCode::OK);
    }
    assert_eq!(
        *order.lock().unwrap(),
        ["plain", "header-high", "vip-and-high", "lowered"]
    );
}
