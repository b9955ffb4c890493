//! WS-Eventing 2011's zero duration: `Expires` PT0S asks for an indefinite expiration (the
//! 2011 schema's expiration is a non-negative duration; Apache CXF asks so for a
//! subscription that does not expire). With BestEffort the source grants its maximum,
//! without it the value is unsupported; 2004/08 still refuses a zero expiration.

use crate::support;

use lather_envelope::{FaultKind, SoapVersion};
use support::{Answer, envelope, event_source, post};

const WSE11: &str = "http://www.w3.org/2011/03/ws-evt";
const WSE04: &str = "http://schemas.xmlsoap.org/ws/2004/08/eventing";
const WSA10: &str = "http://www.w3.org/2005/08/addressing";

/// A Subscribe in `wse` (with WS-Addressing 1.0) carrying `expires`.
async fn subscribe(addr: std::net::SocketAddr, wse: &str, expires: &str) -> Answer {
    let header = format!(
        r#"<wsa:Action xmlns:wsa="{WSA10}">{wse}/Subscribe</wsa:Action><wsa:MessageID xmlns:wsa="{WSA10}">urn:uuid:00000000-0000-4000-8000-000000000011</wsa:MessageID>"#
    );
    let body = format!(
        r#"<wse:Subscribe xmlns:wse="{wse}" xmlns:wsa="{WSA10}"><wse:Delivery><wse:NotifyTo><wsa:Address>http://127.0.0.1:9/sink</wsa:Address></wse:NotifyTo></wse:Delivery>{expires}</wse:Subscribe>"#
    );
    post(
        addr,
        "/events",
        SoapVersion::V11,
        envelope(SoapVersion::V11, &header, &body),
    )
    .await
}

#[tokio::test]
async fn a_2011_zero_duration_asks_for_no_expiry() {
    let server = event_source("max_expires_s = 900").await;
    // As CXF 4.1.5 writes PT0S (javax.xml.datatype.Duration#toString), best effort.
    let granted = subscribe(
        server.addr,
        WSE11,
        r#"<wse:Expires BestEffort="true">P0Y0M0DT0H0M0.000S</wse:Expires>"#,
    )
    .await;
    assert!(
        granted
            .text()
            .contains("<wse:GrantedExpires>PT900S</wse:GrantedExpires>"),
        "the maximum: {}",
        granted.text()
    );
    // Without BestEffort an indefinite expiration cannot be granted.
    let refused = subscribe(server.addr, WSE11, "<wse:Expires>PT0S</wse:Expires>").await;
    refused.assert_fault(FaultKind::UnsupportedExpirationValue, SoapVersion::V11);
    assert!(refused.text().contains("indefinite"), "{}", refused.text());
    // 2004/08 gives the zero duration no meaning.
    let old = subscribe(server.addr, WSE04, "<wse:Expires>PT0S</wse:Expires>").await;
    old.assert_fault(FaultKind::InvalidExpirationTime, SoapVersion::V11);
}
