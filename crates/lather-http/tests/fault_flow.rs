//! The fault flow: faults raised by a handler, by lather, or answered by the service run
//! through the service's `fault` stages before they go back; successes do not.

use crate::support;

use http::StatusCode;
use lather_envelope::{FaultKind, SoapVersion};
use lather_test_util::ScratchDir;
use std::path::Path;
use support::*;

fn config(path: &Path, service: &str) -> String {
    format!(
        r#"
[handlers.audit]
kind = "audit-file"
path = "{}"
fsync = "always"

[handlers.slow]
kind = "sleep"
millis = 2000
timeout_ms = 30

{service}
fault = [["audit"]]
"#,
        path.display()
    )
}

/// The audit records: the fault envelopes the fault flow saw.
fn records(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.split("lather-audit ")
        .filter(|r| !r.is_empty())
        .map(str::to_owned)
        .collect()
}

#[tokio::test]
async fn a_handler_fault_runs_the_fault_flow_and_keeps_its_status() {
    let dir = ScratchDir::new("fault-flow-handler");
    let path = dir.join("faults.log");
    let s = TestServer::start(&config(
        &path,
        "[[service]]\nname = \"echo\"\npath = \"/echo\"\nbuiltin = \"echo\"\nrequest = [[\"slow\"]]",
    ))
    .await;
    let answer = post(
        s.addr,
        "/echo",
        SoapVersion::V12,
        envelope(SoapVersion::V12, "", ECHO_PAYLOAD),
    )
    .await;
    answer.assert_fault(FaultKind::HandlerTimeout, SoapVersion::V12);
    let records = records(&path);
    assert_eq!(records.len(), 1, "{records:?}");
    assert!(
        records[0].contains("handler slow did not finish"),
        "{}",
        records[0]
    );
}

#[tokio::test]
async fn a_message_refusal_runs_the_fault_flow_but_a_success_does_not() {
    let dir = ScratchDir::new("fault-flow-refusal");
    let path = dir.join("faults.log");
    let s = TestServer::start(&config(
        &path,
        "[[service]]\nname = \"echo\"\npath = \"/echo\"\nbuiltin = \"echo\"",
    ))
    .await;
    let ok = post(
        s.addr,
        "/echo",
        SoapVersion::V11,
        envelope(SoapVersion::V11, "", ECHO_PAYLOAD),
    )
    .await;
    assert_eq!(ok.status, StatusCode::OK);
    assert!(
        records(&path).is_empty(),
        "a success went through the fault flow"
    );

    let header = r#"<x:Must xmlns:x="urn:x" s:mustUnderstand="true">1</x:Must>"#;
    let answer = post(
        s.addr,
        "/echo",
        SoapVersion::V12,
        envelope(SoapVersion::V12, header, ECHO_PAYLOAD),
    )
    .await;
    answer.assert_fault(FaultKind::MustUnderstand, SoapVersion::V12);
    let records = records(&path);
    assert_eq!(records.len(), 1, "{records:?}");
    assert!(records[0].contains("MustUnderstand"), "{}", records[0]);
}

#[tokio::test]
async fn a_fault_answered_by_the_backend_runs_the_fault_flow() {
    const FAULT: &str = r#"<soap:Envelope xmlns:soap="http://www.w3.org/2003/05/soap-envelope"><soap:Body><soap:Fault><soap:Code><soap:Value>soap:Receiver</soap:Value></soap:Code><soap:Reason><soap:Text xml:lang="en">backend says no</soap:Text></soap:Reason></soap:Fault></soap:Body></soap:Envelope>"#;
    let dir = ScratchDir::new("fault-flow-backend");
    let path = dir.join("faults.log");
    let backend = fixed_backend(500, "application/soap+xml; charset=utf-8", FAULT, 0).await;
    let s = TestServer::start(&config(
        &path,
        &format!(
            "[[service]]\nname = \"gw\"\npath = \"/gw\"\nupstream = [\"http://{backend}/ws\"]"
        ),
    ))
    .await;
    let answer = post(
        s.addr,
        "/gw",
        SoapVersion::V12,
        envelope(SoapVersion::V12, "", ECHO_PAYLOAD),
    )
    .await;
    assert_eq!(answer.status, StatusCode::INTERNAL_SERVER_ERROR);
    assert!(answer.text().contains("backend says no"));
    let records = records(&path);
    assert_eq!(records.len(), 1, "{records:?}");
    assert!(records[0].contains("backend says no"), "{}", records[0]);
}
