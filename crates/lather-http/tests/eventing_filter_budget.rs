//! XPath filters cannot freeze the server: a hostile filter is refused at Subscribe with
//! the version's filter fault, and a costly-but-accepted filter evaluated against a big
//! event leaves `GET /health` answered while the publish runs.

use crate::support;

use lather_envelope::{FaultKind, SoapVersion};
use std::time::Duration;
use support::{Answer, TestServer, post_with_action as post};

const WSE11: &str = "http://www.w3.org/2011/03/ws-evt";
const WSE04: &str = "http://schemas.xmlsoap.org/ws/2004/08/eventing";
const WSA10: &str = "http://www.w3.org/2005/08/addressing";
const SOAP: SoapVersion = SoapVersion::V12;

async fn subscribe(server: &TestServer, wse: &str, expression: &str) -> Answer {
    let body = format!(
        r#"<wse:Subscribe xmlns:wse="{wse}" xmlns:wsa="{WSA10}"><wse:Delivery><wse:NotifyTo><wsa:Address>http://127.0.0.1:9/sink</wsa:Address></wse:NotifyTo></wse:Delivery><wse:Filter>{expression}</wse:Filter></wse:Subscribe>"#
    );
    let headers = format!(
        r#"<wsa:Action xmlns:wsa="{WSA10}">{wse}/Subscribe</wsa:Action><wsa:MessageID xmlns:wsa="{WSA10}">urn:uuid:req-1</wsa:MessageID>"#
    );
    post(
        server.addr,
        "/events",
        SOAP,
        &format!("{wse}/Subscribe"),
        support::envelope(SOAP, &headers, &body),
    )
    .await
}

#[tokio::test]
async fn a_hostile_filter_is_refused_at_subscribe() {
    let server = support::event_source("").await;
    let answer = subscribe(&server, WSE11, "//*[//*[//*[//*]]]").await;
    answer.assert_fault(FaultKind::CannotProcessFilter, SOAP);
    assert!(answer.text().contains("too costly"), "{}", answer.text());
    assert!(answer.text().contains("filter_budget"), "{}", answer.text());
    let answer = subscribe(&server, WSE04, "//*[//*[//*[//*]]]").await;
    answer.assert_fault(FaultKind::FilteringRequestedUnavailable, SOAP);
    // An ordinary filter is granted.
    let answer = subscribe(&server, WSE11, "//*[. &gt; 25]").await;
    assert_eq!(answer.status, 200, "{}", answer.text());
}

/// One worker thread: a filter evaluated on it would hold every other request back.
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_costly_filter_does_not_hold_health_back() {
    // A budget raised far enough for an accepted filter to take a long time on a big event.
    let server = support::event_source("filter_budget = 400000000").await;
    let answer = subscribe(&server, WSE11, "//*[//*]").await;
    assert_eq!(answer.status, 200, "{}", answer.text());
    let event = format!("<e>{}</e>", "<e>1</e>".repeat(3000));
    let addr = server.addr;
    let publish = tokio::spawn(async move {
        post(
            addr,
            "/events/publish",
            SOAP,
            "urn:ev/T",
            support::envelope(SOAP, "", &event),
        )
        .await
    });
    // Give the publish time to reach its filter (not an assertion: only the order below is).
    tokio::time::sleep(Duration::from_millis(300)).await;
    let health = tokio::time::timeout(Duration::from_secs(10), support::get(addr, "/health"))
        .await
        .expect("/health answered while the publish runs");
    assert_eq!(health.status, 200, "{}", health.text());
    assert!(
        !publish.is_finished(),
        "the publish should still be evaluating its filter"
    );
    let published = tokio::time::timeout(Duration::from_secs(120), publish)
        .await
        .expect("the publish ends")
        .unwrap();
    assert_eq!(published.status, 200, "{}", published.text());
}

#[tokio::test]
async fn an_event_over_the_budget_is_not_taken_and_counted() {
    let server = support::event_source("filter_budget = 20000").await;
    // Linear in the event: cheap on the checked worst case, over budget on a big event.
    let answer = subscribe(&server, WSE11, "count(//*) &gt; 1").await;
    assert_eq!(answer.status, 200, "{}", answer.text());
    let event = format!("<e>{}</e>", "<e>1</e>".repeat(12_000));
    let answer = post(
        server.addr,
        "/events/publish",
        SOAP,
        "urn:ev/T",
        support::envelope(SOAP, "", &event),
    )
    .await;
    assert_eq!(answer.status, 200, "{}", answer.text());
    assert!(answer.text().contains("queued=\"0\""), "{}", answer.text());
    let metrics = support::get(server.addr, "/metrics").await;
    assert_eq!(
        support::metric(
            metrics.text(),
            "lather_eventing_filters_over_budget_total{service=\"events\"}"
        ),
        Some(1.0),
        "{}",
        metrics.text()
    );
}
