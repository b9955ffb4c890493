//! The `event-source` builtin over real HTTP: every WS-Eventing operation of both versions,
//! their faults, topic filters, expiry, renewal, dead and slow sinks, and subscriptions
//! surviving a restart. Sinks are small hyper servers that record what they receive.

use crate::support;

use lather_envelope::{Envelope, FaultKind, QName, SoapVersion};
use lather_test_util::ScratchDir;
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use support::sink::{next, sink};
use support::{Answer, TestServer, closed_port, event_source as source, post_with_action as post};

const WSE04: &str = "http://schemas.xmlsoap.org/ws/2004/08/eventing";
const WSE11: &str = "http://www.w3.org/2011/03/ws-evt";
const WSA04: &str = "http://schemas.xmlsoap.org/ws/2004/08/addressing";
const WSA10: &str = "http://www.w3.org/2005/08/addressing";
const LEV: &str = "urn:lather:eventing";
const TOPIC: &str = "urn:lather:eventing:topic";

/// An eventing request of `operation` in version (`wse`, `wsa`) with `headers` and `body`.
fn request(
    soap: SoapVersion,
    wse: &str,
    wsa: &str,
    operation: &str,
    headers: &str,
    body: &str,
) -> String {
    support::envelope(
        soap,
        &format!(
            r#"<wsa:Action xmlns:wsa="{wsa}">{wse}/{operation}</wsa:Action><wsa:MessageID xmlns:wsa="{wsa}">urn:uuid:req-1</wsa:MessageID><wsa:To xmlns:wsa="{wsa}">http://x/events</wsa:To>{headers}"#
        ),
        body,
    )
}

fn subscribe_body(
    wse: &str,
    wsa: &str,
    notify: SocketAddr,
    end_to: Option<SocketAddr>,
    extra: &str,
) -> String {
    let end_to = end_to.map_or(String::new(), |a| {
        format!(r#"<wse:EndTo><wsa:Address>http://{a}/end</wsa:Address></wse:EndTo>"#)
    });
    format!(
        r#"<wse:Subscribe xmlns:wse="{wse}" xmlns:wsa="{wsa}" xmlns:app="urn:app">{end_to}<wse:Delivery><wse:NotifyTo><wsa:Address>http://{notify}/sink</wsa:Address><wsa:ReferenceParameters><app:Key>k-1</app:Key></wsa:ReferenceParameters></wse:NotifyTo></wse:Delivery>{extra}</wse:Subscribe>"#
    )
}

async fn subscribe(
    server: &TestServer,
    soap: SoapVersion,
    wse: &str,
    wsa: &str,
    body: String,
) -> (Answer, String) {
    let answer = post(
        server.addr,
        "/events",
        soap,
        &format!("{wse}/Subscribe"),
        request(soap, wse, wsa, "Subscribe", "", &body),
    )
    .await;
    assert_eq!(answer.status, 200, "{}", answer.text());
    let text = answer.text();
    let start = text.find("Identifier").expect("an identifier");
    let start = start + text[start..].find('>').unwrap() + 1;
    let end = start + text[start..].find('<').unwrap();
    let id = text[start..end].to_owned();
    (answer, id)
}

async fn manager_op(
    server: &TestServer,
    soap: SoapVersion,
    wse: &str,
    wsa: &str,
    op: &str,
    id: &str,
    body: &str,
) -> Answer {
    let id_header = if wse == WSE04 {
        format!(r#"<wse:Identifier xmlns:wse="{WSE04}">{id}</wse:Identifier>"#)
    } else {
        format!(r#"<lev:Identifier xmlns:lev="{LEV}">{id}</lev:Identifier>"#)
    };
    post(
        server.addr,
        "/events",
        soap,
        &format!("{wse}/{op}"),
        request(soap, wse, wsa, op, &id_header, body),
    )
    .await
}

async fn publish(
    server: &TestServer,
    soap: SoapVersion,
    action: &str,
    headers: &str,
    event: &str,
) -> Answer {
    let answer = post(
        server.addr,
        "/events/publish",
        soap,
        action,
        support::envelope(soap, headers, event),
    )
    .await;
    assert_eq!(answer.status, 200, "{}", answer.text());
    answer
}

fn queued(answer: &Answer) -> usize {
    let text = answer.text();
    let start = text.find("queued=\"").unwrap() + 8;
    text[start..start + text[start..].find('"').unwrap()]
        .parse()
        .unwrap()
}

fn header_text(env: &Envelope, ns: &str, local: &str) -> Option<String> {
    env.header(&QName::new(ns, local))
        .and_then(|b| env.header_text(b))
}

const EVENT: &str = r#"<ev:Temperature xmlns:ev="urn:ev"><ev:c>21.5</ev:c></ev:Temperature>"#;

#[tokio::test]
async fn submission_2004_with_wsa_2004_answers_every_operation_and_echoes_reference_parameters() {
    let server = source("").await;
    let (addr, mut rx) = sink(Duration::ZERO).await;
    let soap = SoapVersion::V12;
    let body = subscribe_body(WSE04, WSA04, addr, None, "<wse:Expires>PT60S</wse:Expires>");
    let (answer, id) = subscribe(&server, soap, WSE04, WSA04, body).await;
    let env = answer.envelope();
    assert_eq!(
        header_text(&env, WSA04, "Action").as_deref(),
        Some(&*format!("{WSE04}/SubscribeResponse"))
    );
    assert_eq!(
        header_text(&env, WSA04, "RelatesTo").as_deref(),
        Some("urn:uuid:req-1")
    );
    let text = answer.text();
    assert!(
        text.contains(&format!(
            "<wsa:Address>http://{}/events</wsa:Address>",
            server.addr
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!(r#"<i:Identifier xmlns:i="{WSE04}">urn:uuid:"#)),
        "{text}"
    );
    assert!(text.contains("<wse:Expires>PT60S</wse:Expires>"), "{text}");

    let published = publish(&server, soap, "urn:ev/TemperatureChanged", "", EVENT).await;
    assert_eq!(queued(&published), 1);
    let got = next(&mut rx, Duration::from_secs(5)).await;
    let note = got.envelope();
    assert_eq!(
        header_text(&note, WSA04, "Action").as_deref(),
        Some("urn:ev/TemperatureChanged")
    );
    assert_eq!(
        header_text(&note, WSA04, "To").as_deref(),
        Some(&*format!("http://{addr}/sink"))
    );
    assert_eq!(header_text(&note, "urn:app", "Key").as_deref(), Some("k-1"));
    assert!(
        !got.body.contains("IsReferenceParameter"),
        "WSA 2004/08 has no marker: {}",
        got.body
    );
    assert_eq!(note.operation(), Some(&QName::new("urn:ev", "Temperature")));
    assert!(
        got.content_type
            .contains("action=\"urn:ev/TemperatureChanged\""),
        "{}",
        got.content_type
    );

    let renew = manager_op(
        &server,
        soap,
        WSE04,
        WSA04,
        "Renew",
        &id,
        &format!(r#"<wse:Renew xmlns:wse="{WSE04}"><wse:Expires>PT120S</wse:Expires></wse:Renew>"#),
    )
    .await;
    assert_eq!(renew.status, 200, "{}", renew.text());
    assert!(
        renew.text().contains("<wse:RenewResponse"),
        "{}",
        renew.text()
    );
    assert!(
        renew.text().contains("<wse:Expires>PT120S</wse:Expires>"),
        "{}",
        renew.text()
    );
    let renewed = renew.envelope();
    assert_eq!(
        header_text(&renewed, WSA04, "Action").as_deref(),
        Some(&*format!("{WSE04}/RenewResponse"))
    );

    let status = manager_op(
        &server,
        soap,
        WSE04,
        WSA04,
        "GetStatus",
        &id,
        &format!(r#"<wse:GetStatus xmlns:wse="{WSE04}"/>"#),
    )
    .await;
    assert_eq!(status.status, 200, "{}", status.text());
    let t = status.text();
    assert!(
        t.contains("<wse:GetStatusResponse")
            && (t.contains("<wse:Expires>PT11") || t.contains("<wse:Expires>PT120")),
        "{t}"
    );

    let gone = manager_op(
        &server,
        soap,
        WSE04,
        WSA04,
        "Unsubscribe",
        &id,
        &format!(r#"<wse:Unsubscribe xmlns:wse="{WSE04}"/>"#),
    )
    .await;
    assert_eq!(gone.status, 200, "{}", gone.text());
    assert!(
        gone.text().contains("UnsubscribeResponse"),
        "{}",
        gone.text()
    );
    // 2004/08 answers Unsubscribe with an empty Body: its schema has no UnsubscribeResponse
    // element (schema-validating subscribers such as sdc11073 refuse one).
    assert_eq!(gone.envelope().body_child_count(), 0, "{}", gone.text());
    assert_eq!(
        queued(&publish(&server, soap, "urn:ev/T", "", EVENT).await),
        0
    );
}

#[tokio::test]
async fn submission_2004_with_wsa_10_in_soap_11_marks_reference_parameters() {
    let server = source("event_action = \"urn:ev/Default\"").await;
    let (addr, mut rx) = sink(Duration::ZERO).await;
    let soap = SoapVersion::V11;
    let body = subscribe_body(WSE04, WSA10, addr, None, "");
    let (answer, _id) = subscribe(&server, soap, WSE04, WSA10, body).await;
    let env = answer.envelope();
    assert_eq!(
        header_text(&env, WSA10, "Action").as_deref(),
        Some(&*format!("{WSE04}/SubscribeResponse"))
    );
    assert!(
        answer.text().contains("<wse:Expires>PT3600S</wse:Expires>"),
        "the default maximum: {}",
        answer.text()
    );
    publish(&server, soap, "", "", EVENT).await;
    let got = next(&mut rx, Duration::from_secs(5)).await;
    assert_eq!(got.soap_action.as_deref(), Some("\"urn:ev/Default\""));
    let note = got.envelope();
    assert_eq!(note.version(), SoapVersion::V11);
    assert_eq!(
        header_text(&note, WSA10, "Action").as_deref(),
        Some("urn:ev/Default")
    );
    let key = note
        .header(&QName::new("urn:app", "Key"))
        .expect("the reference parameter");
    let raw = std::str::from_utf8(&note.header_bytes(key))
        .unwrap()
        .to_owned();
    assert!(raw.contains(r#":IsReferenceParameter="true""#), "{raw}");
    assert_eq!(note.header_text(key).as_deref(), Some("k-1"));
}

#[tokio::test]
async fn recommendation_2011_grants_and_manages_with_its_own_shapes() {
    let server = source("max_expires_s = 600").await;
    let (addr, mut rx) = sink(Duration::ZERO).await;
    let soap = SoapVersion::V12;
    let body = subscribe_body(
        WSE11,
        WSA10,
        addr,
        None,
        r#"<wse:Expires BestEffort="true">PT2H</wse:Expires>"#,
    );
    let (answer, id) = subscribe(&server, soap, WSE11, WSA10, body).await;
    let env = answer.envelope();
    assert_eq!(
        header_text(&env, WSA10, "Action").as_deref(),
        Some(&*format!("{WSE11}/SubscribeResponse"))
    );
    let text = answer.text();
    assert!(
        text.contains("<wse:GrantedExpires>PT600S</wse:GrantedExpires>"),
        "capped at the maximum: {text}"
    );
    assert!(
        text.contains(&format!(r#"<i:Identifier xmlns:i="{LEV}">"#)),
        "{text}"
    );

    publish(&server, soap, "urn:ev/T", "", EVENT).await;
    let note = next(&mut rx, Duration::from_secs(5)).await.envelope();
    assert_eq!(header_text(&note, "urn:app", "Key").as_deref(), Some("k-1"));

    let renew = manager_op(
        &server,
        soap,
        WSE11,
        WSA10,
        "Renew",
        &id,
        &format!(r#"<wse:Renew xmlns:wse="{WSE11}"><wse:Expires>PT300S</wse:Expires></wse:Renew>"#),
    )
    .await;
    assert!(
        renew
            .text()
            .contains("<wse:GrantedExpires>PT300S</wse:GrantedExpires>"),
        "{}",
        renew.text()
    );
    let status = manager_op(
        &server,
        soap,
        WSE11,
        WSA10,
        "GetStatus",
        &id,
        &format!(r#"<wse:GetStatus xmlns:wse="{WSE11}"/>"#),
    )
    .await;
    assert!(
        status.text().contains("<wse:GetStatusResponse")
            && status.text().contains("<wse:GrantedExpires>PT"),
        "{}",
        status.text()
    );
    let gone = manager_op(
        &server,
        soap,
        WSE11,
        WSA10,
        "Unsubscribe",
        &id,
        &format!(r#"<wse:Unsubscribe xmlns:wse="{WSE11}"/>"#),
    )
    .await;
    assert_eq!(
        header_text(&gone.envelope(), WSA10, "Action").as_deref(),
        Some(&*format!("{WSE11}/UnsubscribeResponse"))
    );
    let again = manager_op(
        &server,
        soap,
        WSE11,
        WSA10,
        "GetStatus",
        &id,
        &format!(r#"<wse:GetStatus xmlns:wse="{WSE11}"/>"#),
    )
    .await;
    again.assert_fault(FaultKind::UnknownSubscription, soap);
}

/// Asserts `answer` is `kind` with the version's subcode and fault action.
fn assert_eventing_fault(
    answer: &Answer,
    kind: FaultKind,
    soap: SoapVersion,
    wsa: &str,
    action: &str,
) {
    answer.assert_fault(kind, soap);
    let (ns, _, local) = kind.subcode();
    let text = answer.text();
    assert!(
        text.contains(&format!(r#"xmlns:wse="{ns}">wse:{local}<"#)) || ns == "urn:lather:fault",
        "{text}"
    );
    let env = answer.envelope();
    assert_eq!(
        header_text(&env, wsa, "Action").as_deref(),
        Some(action),
        "{text}"
    );
    assert_eq!(
        header_text(&env, wsa, "RelatesTo").as_deref(),
        Some("urn:uuid:req-1"),
        "{text}"
    );
}

#[tokio::test]
async fn each_2004_fault_in_its_binding() {
    let server = source("").await;
    let sink_addr = closed_port().await;
    let soap = SoapVersion::V12;
    let fault_action = format!("{WSA10}/fault");
    let cases = [
        (
            format!(
                r#"<wse:Subscribe xmlns:wse="{WSE04}" xmlns:wsa="{WSA10}"><wse:Delivery Mode="http://schemas.dmtf.org/wbem/wsman/1/wsman/Pull"><wse:NotifyTo><wsa:Address>http://{sink_addr}/</wsa:Address></wse:NotifyTo></wse:Delivery></wse:Subscribe>"#
            ),
            FaultKind::DeliveryModeRequestedUnavailable,
        ),
        (
            subscribe_body(
                WSE04,
                WSA10,
                sink_addr,
                None,
                "<wse:Expires>-PT5S</wse:Expires>",
            ),
            FaultKind::InvalidExpirationTime,
        ),
        (
            subscribe_body(
                WSE04,
                WSA10,
                sink_addr,
                None,
                "<wse:Expires>2001-01-01T00:00:00Z</wse:Expires>",
            ),
            FaultKind::InvalidExpirationTime,
        ),
        (
            subscribe_body(
                WSE04,
                WSA10,
                sink_addr,
                None,
                "<wse:Expires>soon</wse:Expires>",
            ),
            FaultKind::InvalidExpirationTime,
        ),
        (
            subscribe_body(
                WSE04,
                WSA10,
                sink_addr,
                None,
                r#"<wse:Filter Dialect="urn:example:sql">SELECT 1</wse:Filter>"#,
            ),
            FaultKind::FilteringRequestedUnavailable,
        ),
        (
            format!(r#"<wse:Subscribe xmlns:wse="{WSE04}"/>"#),
            FaultKind::InvalidEventingMessage,
        ),
    ];
    for (body, kind) in cases {
        let answer = post(
            server.addr,
            "/events",
            soap,
            &format!("{WSE04}/Subscribe"),
            request(soap, WSE04, WSA10, "Subscribe", "", &body),
        )
        .await;
        assert_eventing_fault(&answer, kind, soap, WSA10, &fault_action);
    }
    let renew = manager_op(
        &server,
        soap,
        WSE04,
        WSA10,
        "Renew",
        "urn:uuid:none",
        &format!(r#"<wse:Renew xmlns:wse="{WSE04}"/>"#),
    )
    .await;
    assert_eventing_fault(&renew, FaultKind::UnableToRenew, soap, WSA10, &fault_action);
    let status = manager_op(
        &server,
        SoapVersion::V11,
        WSE04,
        WSA04,
        "GetStatus",
        "urn:uuid:none",
        &format!(r#"<wse:GetStatus xmlns:wse="{WSE04}"/>"#),
    )
    .await;
    assert_eventing_fault(
        &status,
        FaultKind::InvalidEventingMessage,
        SoapVersion::V11,
        WSA04,
        &format!("{WSA04}/fault"),
    );
    assert!(
        status.text().contains(&format!(
            r#"<faultcode xmlns:wse="{WSE04}">wse:InvalidMessage</faultcode>"#
        )),
        "{}",
        status.text()
    );
}

#[tokio::test]
async fn each_2011_fault_in_its_binding() {
    let server = source("max_expires_s = 60").await;
    let sink_addr = closed_port().await;
    let soap = SoapVersion::V12;
    let fault_action = format!("{WSE11}/fault");
    let cases = [
        (
            subscribe_body(
                WSE11,
                WSA10,
                sink_addr,
                None,
                &format!(r#"<wse:Filter Dialect="{WSE11}/Dialects/XPath20">/a</wse:Filter>"#),
            ),
            FaultKind::FilteringRequestedUnavailable2011,
        ),
        (
            subscribe_body(
                WSE11,
                WSA10,
                sink_addr,
                None,
                &format!(r#"<wse:Filter Dialect="{TOPIC}"> </wse:Filter>"#),
            ),
            FaultKind::EmptyFilter,
        ),
        (
            subscribe_body(
                WSE11,
                WSA10,
                sink_addr,
                None,
                &format!(r#"<wse:Filter Dialect="{TOPIC}">nope:Temperature</wse:Filter>"#),
            ),
            FaultKind::CannotProcessFilter,
        ),
        (
            format!(r#"<wse:Subscribe xmlns:wse="{WSE11}"><wse:Delivery/></wse:Subscribe>"#),
            FaultKind::NoDeliveryMechanismEstablished,
        ),
        (
            subscribe_body(
                WSE11,
                WSA10,
                sink_addr,
                None,
                // Unwrap and Wrap are supported; any other format is not.
                &format!(r#"<wse:Format Name="{WSE11}/DeliveryFormats/Other"/>"#),
            ),
            FaultKind::DeliveryFormatRequestedUnavailable,
        ),
        (
            format!(
                r#"<wse:Subscribe xmlns:wse="{WSE11}" xmlns:wsa="{WSA10}"><wse:Delivery><wse:NotifyTo><wsa:Address>ftp://x/</wsa:Address></wse:NotifyTo></wse:Delivery></wse:Subscribe>"#
            ),
            FaultKind::UnusableEpr,
        ),
        (
            subscribe_body(
                WSE11,
                WSA10,
                sink_addr,
                None,
                "<wse:Expires>PT2H</wse:Expires>",
            ),
            FaultKind::UnsupportedExpirationValue,
        ),
        (
            subscribe_body(
                WSE11,
                WSA10,
                sink_addr,
                None,
                "<wse:Expires>-PT1S</wse:Expires>",
            ),
            FaultKind::UnsupportedExpirationValue,
        ),
        (
            format!(r#"<wse:Pull xmlns:wse="{WSE11}"/>"#),
            FaultKind::InvalidEventingRequest,
        ),
    ];
    for (body, kind) in cases {
        let answer = post(
            server.addr,
            "/events",
            soap,
            &format!("{WSE11}/Subscribe"),
            request(soap, WSE11, WSA10, "Subscribe", "", &body),
        )
        .await;
        assert_eventing_fault(&answer, kind, soap, WSA10, &fault_action);
    }
    for op in ["Renew", "GetStatus", "Unsubscribe"] {
        let answer = manager_op(
            &server,
            soap,
            WSE11,
            WSA10,
            op,
            "urn:uuid:none",
            &format!(r#"<wse:{op} xmlns:wse="{WSE11}"/>"#),
        )
        .await;
        assert_eventing_fault(
            &answer,
            FaultKind::UnknownSubscription,
            soap,
            WSA10,
            &fault_action,
        );
    }
}

#[tokio::test]
async fn topic_filters_pick_events_by_root_name_or_topic_header() {
    let server = source("").await;
    let (temp_addr, mut temp_rx) = sink(Duration::ZERO).await;
    let (alarm_addr, mut alarm_rx) = sink(Duration::ZERO).await;
    let soap = SoapVersion::V12;
    let filter =
        format!(r#"<wse:Filter Dialect="{TOPIC}" xmlns:t="urn:ev">t:Temperature</wse:Filter>"#);
    subscribe(
        &server,
        soap,
        WSE11,
        WSA10,
        subscribe_body(WSE11, WSA10, temp_addr, None, &filter),
    )
    .await;
    let filter = format!(r#"<wse:Filter Dialect="{TOPIC}">alarms</wse:Filter>"#);
    subscribe(
        &server,
        soap,
        WSE04,
        WSA10,
        subscribe_body(WSE04, WSA10, alarm_addr, None, &filter),
    )
    .await;

    let other = r#"<ev:Pressure xmlns:ev="urn:ev">1</ev:Pressure>"#;
    assert_eq!(
        queued(&publish(&server, soap, "urn:ev/P", "", other).await),
        0
    );
    assert_eq!(
        queued(&publish(&server, soap, "urn:ev/T", "", EVENT).await),
        1
    );
    let topic = format!(r#"<lev:Topic xmlns:lev="{LEV}">alarms</lev:Topic>"#);
    assert_eq!(
        queued(&publish(&server, soap, "urn:ev/A", &topic, other).await),
        1
    );
    let t = next(&mut temp_rx, Duration::from_secs(5)).await.envelope();
    assert_eq!(t.operation(), Some(&QName::new("urn:ev", "Temperature")));
    let a = next(&mut alarm_rx, Duration::from_secs(5)).await.envelope();
    assert_eq!(a.operation(), Some(&QName::new("urn:ev", "Pressure")));
}

#[tokio::test]
async fn subscriptions_expire_on_time_and_renewal_keeps_them() {
    let server = source("").await;
    let (addr, _rx) = sink(Duration::ZERO).await;
    let soap = SoapVersion::V12;
    let short = "<wse:Expires>PT0.4S</wse:Expires>";
    let (_, kept) = subscribe(
        &server,
        soap,
        WSE04,
        WSA10,
        subscribe_body(WSE04, WSA10, addr, None, short),
    )
    .await;
    let (_, lapsed) = subscribe(
        &server,
        soap,
        WSE04,
        WSA10,
        subscribe_body(WSE04, WSA10, addr, None, short),
    )
    .await;
    let renew = manager_op(
        &server,
        soap,
        WSE04,
        WSA10,
        "Renew",
        &kept,
        &format!(r#"<wse:Renew xmlns:wse="{WSE04}"><wse:Expires>PT30S</wse:Expires></wse:Renew>"#),
    )
    .await;
    assert_eq!(renew.status, 200, "{}", renew.text());
    tokio::time::sleep(Duration::from_millis(700)).await;
    let status = manager_op(
        &server,
        soap,
        WSE04,
        WSA10,
        "GetStatus",
        &lapsed,
        &format!(r#"<wse:GetStatus xmlns:wse="{WSE04}"/>"#),
    )
    .await;
    status.assert_fault(FaultKind::InvalidEventingMessage, soap);
    let status = manager_op(
        &server,
        soap,
        WSE04,
        WSA10,
        "GetStatus",
        &kept,
        &format!(r#"<wse:GetStatus xmlns:wse="{WSE04}"/>"#),
    )
    .await;
    assert_eq!(status.status, 200, "{}", status.text());
    assert_eq!(
        queued(&publish(&server, soap, "urn:ev/T", "", EVENT).await),
        1
    );
}

#[tokio::test]
async fn a_dead_sink_ends_its_subscription_with_delivery_failure_to_end_to() {
    let server = source("").await;
    let dead = closed_port().await;
    let (end_addr, mut end_rx) = sink(Duration::ZERO).await;
    for (wse, soap) in [(WSE04, SoapVersion::V12), (WSE11, SoapVersion::V11)] {
        let (_, id) = subscribe(
            &server,
            soap,
            wse,
            WSA10,
            subscribe_body(wse, WSA10, dead, Some(end_addr), ""),
        )
        .await;
        assert_eq!(
            queued(&publish(&server, soap, "urn:ev/T", "", EVENT).await),
            1
        );
        let end = next(&mut end_rx, Duration::from_secs(10)).await;
        let env = end.envelope();
        assert_eq!(env.operation(), Some(&QName::new(wse, "SubscriptionEnd")));
        assert_eq!(
            header_text(&env, WSA10, "Action").as_deref(),
            Some(&*format!("{wse}/SubscriptionEnd"))
        );
        assert!(
            end.body
                .contains(&format!("<wse:Status>{wse}/DeliveryFailure</wse:Status>")),
            "{}",
            end.body
        );
        assert_eq!(
            end.body.contains(&id),
            wse == WSE04,
            "2004/08 names the manager EPR: {}",
            end.body
        );
        assert_eq!(
            queued(&publish(&server, soap, "urn:ev/T", "", EVENT).await),
            0,
            "the subscription is gone"
        );
    }
}

#[tokio::test]
async fn a_slow_sink_does_not_delay_a_fast_one() {
    let server = source("").await;
    let (slow, mut slow_rx) = sink(Duration::from_millis(1500)).await;
    let (fast, mut fast_rx) = sink(Duration::ZERO).await;
    let soap = SoapVersion::V12;
    subscribe(
        &server,
        soap,
        WSE04,
        WSA10,
        subscribe_body(WSE04, WSA10, slow, None, ""),
    )
    .await;
    subscribe(
        &server,
        soap,
        WSE04,
        WSA10,
        subscribe_body(WSE04, WSA10, fast, None, ""),
    )
    .await;
    let started = Instant::now();
    for _ in 0..3 {
        assert_eq!(
            queued(&publish(&server, soap, "urn:ev/T", "", EVENT).await),
            2
        );
    }
    for _ in 0..3 {
        next(&mut fast_rx, Duration::from_secs(5)).await;
    }
    let fast_done = started.elapsed();
    assert!(
        fast_done < Duration::from_millis(1000),
        "the fast sink waited {fast_done:?}"
    );
    let first_slow = next(&mut slow_rx, Duration::from_secs(5)).await;
    assert!(first_slow.at.duration_since(started) < Duration::from_millis(1000));
}

#[tokio::test]
async fn subscriptions_survive_a_restart() {
    let dir = ScratchDir::new("eventing");
    let path = dir.join("subs.redb");
    let extra = format!("store = {:?}", path.display().to_string());
    let (addr, mut rx) = sink(Duration::ZERO).await;
    let soap = SoapVersion::V12;
    let id = {
        let mut server = source(&extra).await;
        let (_, id) = subscribe(
            &server,
            soap,
            WSE04,
            WSA10,
            subscribe_body(WSE04, WSA10, addr, None, ""),
        )
        .await;
        server.shutdown().await.unwrap().unwrap();
        id
    };
    // The first server's store closes once its last task lets go of it.
    let mut reopened = None;
    for _ in 0..50 {
        let text = format!(
            "[server]\nlisten = \"127.0.0.1:0\"\n[[service]]\nname = \"events\"\npath = \"/events\"\nbuiltin = \"event-source\"\nnotify_allow = [\"127.0.0.1\"]\n{extra}\n"
        );
        let config = lather_config::Config::from_toml(&text, "test.toml").unwrap();
        match lather_http::Server::bind(&config).await {
            Ok(_) => {
                reopened = Some(());
                break;
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
    assert!(reopened.is_some(), "the store could be reopened");
    let server = source(&extra).await;
    assert_eq!(
        queued(&publish(&server, soap, "urn:ev/T", "", EVENT).await),
        1
    );
    let note = next(&mut rx, Duration::from_secs(5)).await.envelope();
    assert_eq!(header_text(&note, "urn:app", "Key").as_deref(), Some("k-1"));
    let status = manager_op(
        &server,
        soap,
        WSE04,
        WSA10,
        "GetStatus",
        &id,
        &format!(r#"<wse:GetStatus xmlns:wse="{WSE04}"/>"#),
    )
    .await;
    assert_eq!(status.status, 200, "{}", status.text());
    drop(server);
}
