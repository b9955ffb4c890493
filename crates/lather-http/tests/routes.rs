//! Routes pick other stages per message: by operation, by action, by a header's presence.

use crate::support;

use http::StatusCode;
use lather_envelope::{FaultKind, SoapVersion};
use support::*;

/// The service's own request flow always times out; routes replace it with one that works.
const CONFIG: &str = r#"
[handlers.slow]
kind = "sleep"
millis = 2000
timeout_ms = 30

[handlers.burn]
kind = "cpu-burn"
micros = 10

[[service]]
name = "echo"
path = "/echo"
builtin = "echo"
request = [["slow"]]

[[service.route]]
operation = "{urn:lather:echo}echo"
request = [["burn"]]

[[service.route]]
action = "urn:fast"
request = [["burn"]]

[[service.route]]
header = "{urn:x}Fast"
request = []
"#;

#[tokio::test]
async fn the_first_matching_route_decides_the_stages() {
    let s = TestServer::start(CONFIG).await;
    // By operation.
    let ok = post(
        s.addr,
        "/echo",
        SoapVersion::V12,
        envelope(SoapVersion::V12, "", ECHO_PAYLOAD),
    )
    .await;
    assert_eq!(ok.status, StatusCode::OK, "{}", ok.text());
    // No route: the service's own flow.
    let other = r#"<m:other xmlns:m="urn:m"/>"#;
    let slow = post(
        s.addr,
        "/echo",
        SoapVersion::V12,
        envelope(SoapVersion::V12, "", other),
    )
    .await;
    slow.assert_fault(FaultKind::HandlerTimeout, SoapVersion::V12);
    // By the SOAP 1.1 SOAPAction header, and by wsa:Action.
    let mut req = soap_request(
        s.addr,
        "/echo",
        SoapVersion::V11,
        envelope(SoapVersion::V11, "", other),
    );
    req.headers_mut()
        .insert("soapaction", "\"urn:fast\"".parse().unwrap());
    assert_eq!(send(s.addr, req).await.status, StatusCode::OK);
    let wsa = r#"<a:Action xmlns:a="http://www.w3.org/2005/08/addressing">urn:fast</a:Action>"#;
    let ok = post(
        s.addr,
        "/echo",
        SoapVersion::V12,
        envelope(SoapVersion::V12, wsa, other),
    )
    .await;
    assert_eq!(ok.status, StatusCode::OK, "{}", ok.text());
    // By a header's presence (and an empty flow: no handler at all).
    let fast = r#"<x:Fast xmlns:x="urn:x"/>"#;
    let ok = post(
        s.addr,
        "/echo",
        SoapVersion::V11,
        envelope(SoapVersion::V11, fast, other),
    )
    .await;
    assert_eq!(ok.status, StatusCode::OK, "{}", ok.text());
}
