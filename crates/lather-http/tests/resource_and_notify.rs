//! `wsrf-resource` and `notify` in one parallel stage in front of an echo service: each
//! message updates its resource and is announced to a sink over real HTTP.

use crate::support;

use http::StatusCode;
use lather_envelope::SoapVersion;
use lather_test_util::ScratchDir;
use support::*;

const ID: &str = r#"<wsrf:ResourceId xmlns:wsrf="urn:lather:wsrf">sensor-1</wsrf:ResourceId>"#;
const READING: &str =
    r#"<s:Reading xmlns:s="urn:lather:sensor"><s:value>42.5</s:value></s:Reading>"#;
const GET_COUNT: &str = r#"<wsrp:GetResourceProperty xmlns:wsrp="http://docs.oasis-open.org/wsrf/rp-2" xmlns:wsrf="urn:lather:wsrf">wsrf:MessageCount</wsrp:GetResourceProperty>"#;

#[tokio::test]
async fn messages_update_their_resource_and_reach_the_sink() {
    let sink = TestServer::echo().await;
    let dir = ScratchDir::new("wsrf-http");
    let store = dir.join("resources.redb");
    let s = TestServer::start(&format!(
        r#"
[handlers.resource]
kind = "wsrf-resource"
path = "{}"

[handlers.announce]
kind = "notify"
sink = "{}"

[[service]]
name = "sensors"
path = "/sensors"
builtin = "echo"
request = [["resource", "announce"]]
"#,
        store.display(),
        sink.url("/echo")
    ))
    .await;
    for _ in 0..3 {
        let answer = post(
            s.addr,
            "/sensors",
            SoapVersion::V11,
            envelope(SoapVersion::V11, ID, READING),
        )
        .await;
        assert_eq!(answer.status, StatusCode::OK, "{}", answer.text());
        assert!(answer.text().contains("42.5"), "the service answered");
    }
    // The resource answers a property request itself.
    let answer = post(
        s.addr,
        "/sensors",
        SoapVersion::V11,
        envelope(SoapVersion::V11, ID, GET_COUNT),
    )
    .await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.text());
    assert!(
        answer.text().contains("GetResourcePropertyResponse"),
        "{}",
        answer.text()
    );
    assert!(
        answer.text().contains(">3</wsrf:MessageCount>"),
        "{}",
        answer.text()
    );
    // The sink received one SOAP 1.2 notification per message that reached the stage (4).
    let metrics = get(sink.addr, "/metrics").await;
    let received = metric(
        metrics.text(),
        "lather_requests_total{service=\"echo\",code=\"200\"}",
    );
    assert_eq!(received, Some(4.0), "{}", metrics.text());
}
