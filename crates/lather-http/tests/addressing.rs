//! WS-Addressing and format conversion over HTTP: an echo service whose request flow runs
//! `wsa` and `format-convert` in one stage, the answers it gets, and the addressing faults
//! on the wire.

use crate::support;

use http::StatusCode;
use lather_envelope::{Envelope, FaultKind, SoapVersion, WSA04_NS, WSA10_NS};
use support::*;

/// The action `soap_request` sends (SOAPAction / `action` parameter).
const ACTION: &str = "urn:lather:echo#echo";
const MESSAGE_ID: &str = "urn:uuid:0f8fad5b-d9cb-469f-a165-70867728950e";

/// A quote request in the 2009 format, and the same in the 2024 format as
/// `examples/format-convert.map` renames it.
const OLD_BODY: &str = r#"<q:getQuote xmlns:q="urn:example:quotes:2009" id="7"><q:sym q:cur="EUR">LATH</q:sym></q:getQuote>"#;
const NEW_BODY: &str = r#"<q:GetQuote xmlns:q="urn:example:quotes:2024" id="7"><q:Symbol currency="EUR">LATH</q:Symbol></q:GetQuote>"#;

/// `/quotes` converts on the way in and back on the way out; `/quotes-new` only on the way
/// in, so its echo shows what the service received.
async fn server() -> TestServer {
    let map = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/format-convert.map"
    );
    TestServer::start(&format!(
        "[handlers.wsa]\nkind = \"wsa\"\n\
         [handlers.to-2024]\nkind = \"format-convert\"\nmapping_file = \"{map}\"\n\
         [handlers.to-2009]\nkind = \"format-convert\"\nmapping_file = \"{map}\"\nreverse = true\n\
         [[service]]\nname = \"quotes\"\npath = \"/quotes\"\nbuiltin = \"echo\"\n\
         request = [[\"wsa\", \"to-2024\"]]\nresponse = [[\"wsa\", \"to-2009\"]]\n\
         [[service]]\nname = \"quotes-new\"\npath = \"/quotes-new\"\nbuiltin = \"echo\"\n\
         request = [[\"wsa\", \"to-2024\"]]\nresponse = [[\"wsa\"]]\n"
    ))
    .await
}

fn text(ns: &str, local: &str, value: &str) -> String {
    format!(r#"<wsa:{local} xmlns:wsa="{ns}">{value}</wsa:{local}>"#)
}

/// The addressing headers of a request to the echo: To, Action, MessageID, an anonymous
/// ReplyTo (marked mustUnderstand, which `wsa` makes understood).
fn headers(version: SoapVersion, ns: &str) -> String {
    let mu = if version == SoapVersion::V11 {
        "1"
    } else {
        "true"
    };
    let anonymous = if ns == WSA10_NS {
        format!("{ns}/anonymous")
    } else {
        format!("{ns}/role/anonymous")
    };
    format!(
        r#"{}<wsa:Action xmlns:wsa="{ns}" s:mustUnderstand="{mu}">{ACTION}</wsa:Action>{}<wsa:ReplyTo xmlns:wsa="{ns}"><wsa:Address>{anonymous}</wsa:Address></wsa:ReplyTo>"#,
        text(ns, "To", "http://lather.example/quotes"),
        text(ns, "MessageID", MESSAGE_ID),
    )
}

fn texts(envelope: &Envelope, ns: &str, local: &str) -> Vec<String> {
    envelope
        .headers()
        .iter()
        .filter(|b| b.name().is(ns, local))
        .map(|b| envelope.header_text(b).unwrap())
        .collect()
}

fn is_urn_uuid_v4(text: &str) -> bool {
    let Some(uuid) = text.strip_prefix("urn:uuid:") else {
        return false;
    };
    let groups: Vec<&str> = uuid.split('-').collect();
    groups.iter().map(|g| g.len()).eq([8, 4, 4, 4, 12])
        && groups[2].starts_with('4')
        && groups[3].starts_with(['8', '9', 'a', 'b'])
}

#[tokio::test]
async fn the_service_gets_the_new_format_and_the_client_its_own_back() {
    let s = server().await;
    for version in [SoapVersion::V11, SoapVersion::V12] {
        for ns in [WSA10_NS, WSA04_NS] {
            let request = envelope(version, &headers(version, ns), OLD_BODY);
            let seen = post(s.addr, "/quotes-new", version, request.clone()).await;
            assert_eq!(seen.status, StatusCode::OK, "{}", seen.text());
            let seen = seen.envelope();
            assert_eq!(&seen.body()[..], NEW_BODY.as_bytes());

            let back = post(s.addr, "/quotes", version, request).await;
            assert_eq!(back.status, StatusCode::OK, "{}", back.text());
            let back = back.envelope();
            assert_eq!(&back.body()[..], OLD_BODY.as_bytes());

            for answer in [&seen, &back] {
                // The echo relates its answer itself; wsa adds no second RelatesTo.
                assert_eq!(texts(answer, ns, "RelatesTo"), [MESSAGE_ID]);
                let ids = texts(answer, ns, "MessageID");
                assert!(ids.len() == 1 && is_urn_uuid_v4(&ids[0]), "{ids:?}");
                assert_eq!(texts(answer, ns, "Action"), [format!("{ACTION}Response")]);
                assert_eq!(texts(answer, ns, "To").len(), 1);
            }
        }
    }
}

#[tokio::test]
async fn a_missing_action_is_a_soap12_sender_fault_with_the_addressing_subcode() {
    let s = server().await;
    let version = SoapVersion::V12;
    let request = envelope(version, &text(WSA10_NS, "MessageID", MESSAGE_ID), OLD_BODY);
    let answer = post(s.addr, "/quotes", version, request).await;
    answer.assert_fault(FaultKind::MessageAddressingHeaderRequired, version);
    assert_eq!(answer.status, StatusCode::BAD_REQUEST);
    let body = answer.text();
    assert!(body.contains("<env:Value>env:Sender</env:Value>"), "{body}");
    assert!(
        body.contains(&format!(
            r#"<env:Subcode><env:Value xmlns:wsa="{WSA10_NS}">wsa:MessageAddressingHeaderRequired</env:Value></env:Subcode>"#
        )),
        "{body}"
    );
    assert!(
        body.contains(&format!(
            r#"<wsa:ProblemHeaderQName xmlns:wsa="{WSA10_NS}">wsa:Action</wsa:ProblemHeaderQName>"#
        )),
        "{body}"
    );
    let fault = answer.envelope();
    assert_eq!(
        texts(&fault, WSA10_NS, "Action"),
        [format!("{WSA10_NS}/fault")]
    );
    assert_eq!(texts(&fault, WSA10_NS, "RelatesTo"), [MESSAGE_ID]);
}

#[tokio::test]
async fn an_action_mismatch_is_a_soap11_fault_with_the_addressing_faultcode() {
    let s = server().await;
    let version = SoapVersion::V11;
    let mut request = envelope(version, &headers(version, WSA10_NS), OLD_BODY);
    request = request.replace(
        &format!(">{ACTION}</wsa:Action>"),
        ">urn:lather:echo#other</wsa:Action>",
    );
    let answer = post(s.addr, "/quotes", version, request).await;
    answer.assert_fault(FaultKind::ActionMismatch, version);
    assert_eq!(answer.status, StatusCode::INTERNAL_SERVER_ERROR);
    let body = answer.text();
    assert!(
        body.contains(&format!(
            r#"<faultcode xmlns:wsa="{WSA10_NS}">wsa:InvalidAddressingHeader</faultcode>"#
        )),
        "{body}"
    );
    // SOAP 1.1 carries the problem header in a wsa:FaultDetail header block.
    let fault = answer.envelope();
    assert!(
        fault
            .header(&lather_envelope::QName::new(WSA10_NS, "FaultDetail"))
            .is_some(),
        "{body}"
    );
}

#[tokio::test]
async fn a_2004_request_without_to_is_refused_in_its_own_namespace() {
    let s = server().await;
    let version = SoapVersion::V11;
    let request = envelope(version, &text(WSA04_NS, "Action", ACTION), OLD_BODY);
    let answer = post(s.addr, "/quotes", version, request).await;
    answer.assert_fault(FaultKind::MessageInformationHeaderRequired, version);
    assert!(
        answer.text().contains(&format!(
            r#"<faultcode xmlns:wsa="{WSA04_NS}">wsa:MessageInformationHeaderRequired</faultcode>"#
        )),
        "{}",
        answer.text()
    );
}

#[tokio::test]
async fn requests_without_addressing_are_converted_and_answered_plainly() {
    let s = server().await;
    let version = SoapVersion::V12;
    let answer = post(
        s.addr,
        "/quotes-new",
        version,
        envelope(version, "", OLD_BODY),
    )
    .await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.text());
    let answer = answer.envelope();
    assert_eq!(&answer.body()[..], NEW_BODY.as_bytes());
    assert!(answer.headers().is_empty(), "{:?}", answer.headers());
}
