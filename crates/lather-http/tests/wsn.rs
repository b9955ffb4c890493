//! WS-BaseNotification 1.3 at the `event-source` builtin over real HTTP: every operation,
//! each fault with its BaseFault detail, both topic dialects, raw and wrapped delivery,
//! reference parameters, expiry and renewal, Notify as a publish, and durability.

use crate::support;

use lather_envelope::datetime;
use lather_envelope::{Envelope, FaultKind, QName, SoapVersion};
use lather_test_util::ScratchDir;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use support::sink::{next, nothing, sink};
use support::{Answer, TestServer, closed_port, event_source as source, post_with_action as post};

const WSNT: &str = "http://docs.oasis-open.org/wsn/b-2";
const BW: &str = "http://docs.oasis-open.org/wsn/bw-2";
const WSA: &str = "http://www.w3.org/2005/08/addressing";
const LEV: &str = "urn:lather:eventing";
const SIMPLE: &str = "http://docs.oasis-open.org/wsn/t-1/TopicExpression/Simple";
const CONCRETE: &str = "http://docs.oasis-open.org/wsn/t-1/TopicExpression/Concrete";
const FAULT_ACTION: &str = "http://docs.oasis-open.org/wsn/fault";

const TEMPERATURE: &str = r#"<ev:Temperature xmlns:ev="urn:ev"><ev:c>21.5</ev:c></ev:Temperature>"#;
const PRESSURE: &str = r#"<ev:Pressure xmlns:ev="urn:ev"><ev:hpa>1013</ev:hpa></ev:Pressure>"#;
const ALARM: &str = r#"<ev:Alarm xmlns:ev="urn:ev"><ev:room>12</ev:room></ev:Alarm>"#;

/// A WSN request to `/events` with `wsa:Action` = `action`, `headers` and `body`.
async fn call(
    server: &TestServer,
    soap: SoapVersion,
    action: &str,
    headers: &str,
    body: &str,
) -> Answer {
    let envelope = support::envelope(
        soap,
        &format!(
            r#"<wsa:Action xmlns:wsa="{WSA}">{action}</wsa:Action><wsa:MessageID xmlns:wsa="{WSA}">urn:uuid:req-1</wsa:MessageID><wsa:To xmlns:wsa="{WSA}">http://x/events</wsa:To>{headers}"#
        ),
        body,
    );
    post(server.addr, "/events", soap, action, envelope).await
}

/// A Subscribe to `consumer` (with reference parameter `app:Key` = `k-1`) and `extra`
/// after the ConsumerReference (Filter, InitialTerminationTime, SubscriptionPolicy).
fn subscribe_body(consumer: &str, extra: &str) -> String {
    format!(
        r#"<wsnt:Subscribe xmlns:wsnt="{WSNT}" xmlns:wsa="{WSA}" xmlns:app="urn:app"><wsnt:ConsumerReference><wsa:Address>{consumer}</wsa:Address><wsa:ReferenceParameters><app:Key>k-1</app:Key></wsa:ReferenceParameters></wsnt:ConsumerReference>{extra}</wsnt:Subscribe>"#
    )
}

fn topic_filter(dialect: &str, expression: &str) -> String {
    format!(
        r#"<wsnt:Filter><wsnt:TopicExpression Dialect="{dialect}" xmlns:tns="urn:ev">{expression}</wsnt:TopicExpression></wsnt:Filter>"#
    )
}

/// Subscribes and returns the answer and the subscription identifier.
async fn subscribe(server: &TestServer, soap: SoapVersion, body: String) -> (Answer, String) {
    let answer = call(
        server,
        soap,
        &format!("{BW}/NotificationProducer/SubscribeRequest"),
        "",
        &body,
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

/// A subscription manager request `op` (Renew, Unsubscribe, PauseSubscription, …) naming
/// subscription `id`.
async fn manage(server: &TestServer, op: &str, id: &str, body: &str) -> Answer {
    let header = format!(
        r#"<lev:Identifier xmlns:lev="{LEV}" xmlns:wsa="{WSA}" wsa:IsReferenceParameter="true">{id}</lev:Identifier>"#
    );
    let port = if op.contains("Subscription") {
        "PausableSubscriptionManager"
    } else {
        "SubscriptionManager"
    };
    call(
        server,
        SoapVersion::V12,
        &format!("{BW}/{port}/{op}Request"),
        &header,
        body,
    )
    .await
}

async fn publish(server: &TestServer, action: &str, headers: &str, event: &str) -> usize {
    let soap = SoapVersion::V12;
    let answer = post(
        server.addr,
        "/events/publish",
        soap,
        action,
        support::envelope(soap, headers, event),
    )
    .await;
    assert_eq!(answer.status, 200, "{}", answer.text());
    let text = answer.text();
    let start = text.find("queued=\"").unwrap() + 8;
    text[start..start + text[start..].find('"').unwrap()]
        .parse()
        .unwrap()
}

fn topic_header(topic: &str) -> String {
    format!(r#"<lev:Topic xmlns:lev="{LEV}">{topic}</lev:Topic>"#)
}

fn header_text(env: &Envelope, ns: &str, local: &str) -> Option<String> {
    env.header(&QName::new(ns, local))
        .and_then(|b| env.header_text(b))
}

/// The text of the first `<{tag}>…<` in `text`.
fn element_text<'a>(text: &'a str, tag: &str) -> &'a str {
    let open = format!("<{tag}>");
    let start = text
        .find(&open)
        .unwrap_or_else(|| panic!("no {open} in {text}"))
        + open.len();
    &text[start..start + text[start..].find('<').unwrap()]
}

/// The `xs:dateTime` in `<{tag}>` as Unix milliseconds.
fn time_of(text: &str, tag: &str) -> i64 {
    datetime::parse(element_text(text, tag))
        .unwrap()
        .unix_millis
}

fn now_ms() -> i64 {
    i64::try_from(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_millis(),
    )
    .unwrap()
}

#[tokio::test]
async fn wrapped_notifications_on_a_simple_topic_echo_reference_parameters() {
    let server = source("").await;
    let (addr, mut rx) = sink(Duration::ZERO).await;
    let consumer = format!("http://{addr}/consumer");
    let body = subscribe_body(
        &consumer,
        &format!(
            "{}<wsnt:InitialTerminationTime>PT60S</wsnt:InitialTerminationTime>",
            topic_filter(SIMPLE, "tns:Temperature")
        ),
    );
    let (answer, id) = subscribe(&server, SoapVersion::V12, body).await;
    let env = answer.envelope();
    assert_eq!(
        header_text(&env, WSA, "Action").as_deref(),
        Some(&*format!("{BW}/NotificationProducer/SubscribeResponse"))
    );
    assert_eq!(
        header_text(&env, WSA, "RelatesTo").as_deref(),
        Some("urn:uuid:req-1")
    );
    assert_eq!(
        env.operation(),
        Some(&QName::new(WSNT, "SubscribeResponse"))
    );
    let text = answer.text();
    assert!(
        text.contains(&format!(
            r#"<wsnt:SubscriptionReference><wsa:Address>http://{}/events</wsa:Address><wsa:ReferenceParameters><lev:Identifier xmlns:lev="{LEV}">urn:uuid:"#,
            server.addr
        )),
        "{text}"
    );
    let granted = time_of(text, "wsnt:TerminationTime") - time_of(text, "wsnt:CurrentTime");
    assert!(
        (59_000..=60_000).contains(&granted),
        "granted {granted} ms: {text}"
    );

    assert_eq!(publish(&server, "urn:ev/Changed", "", TEMPERATURE).await, 1);
    assert_eq!(publish(&server, "urn:ev/Changed", "", PRESSURE).await, 0);
    let got = next(&mut rx, Duration::from_secs(5)).await;
    assert_eq!(got.path, "/consumer");
    assert!(
        got.content_type
            .contains(&format!("action=\"{BW}/NotificationConsumer/Notify\"")),
        "{}",
        got.content_type
    );
    let note = got.envelope();
    assert_eq!(note.operation(), Some(&QName::new(WSNT, "Notify")));
    assert_eq!(
        header_text(&note, WSA, "Action").as_deref(),
        Some(&*format!("{BW}/NotificationConsumer/Notify"))
    );
    assert_eq!(header_text(&note, WSA, "To").as_deref(), Some(&*consumer));
    let key = note
        .header(&QName::new("urn:app", "Key"))
        .expect("the reference parameter");
    assert_eq!(note.header_text(key).as_deref(), Some("k-1"));
    let raw = String::from_utf8(note.header_bytes(key).to_vec()).unwrap();
    assert!(raw.contains(r#":IsReferenceParameter="true""#), "{raw}");
    let body = &got.body;
    assert!(
        body.contains(&format!(
            r#"<wsnt:NotificationMessage><wsnt:SubscriptionReference><wsa:Address>http://{}/events</wsa:Address><wsa:ReferenceParameters><lev:Identifier xmlns:lev="{LEV}">{id}</lev:Identifier></wsa:ReferenceParameters></wsnt:SubscriptionReference><wsnt:Topic Dialect="{SIMPLE}" xmlns:tns="urn:ev">tns:Temperature</wsnt:Topic><wsnt:ProducerReference><wsa:Address>http://{}/events</wsa:Address></wsnt:ProducerReference><wsnt:Message><ev:Temperature"#,
            server.addr, server.addr
        )),
        "{body}"
    );
    assert!(body.contains("<ev:c>21.5</ev:c>"), "{body}");
    nothing(&mut rx, Duration::from_millis(200)).await;
}

#[tokio::test]
async fn concrete_topics_match_the_named_path_and_use_raw_delivers_the_event_itself() {
    let server = source("").await;
    let (raw_addr, mut raw_rx) = sink(Duration::ZERO).await;
    let (root_addr, mut root_rx) = sink(Duration::ZERO).await;
    let soap = SoapVersion::V11;
    let raw_policy = "<wsnt:SubscriptionPolicy><wsnt:UseRaw/></wsnt:SubscriptionPolicy>";
    subscribe(
        &server,
        soap,
        subscribe_body(
            &format!("http://{raw_addr}/raw"),
            &format!("{}{raw_policy}", topic_filter(CONCRETE, "tns:Alarms/Fire")),
        ),
    )
    .await;
    subscribe(
        &server,
        soap,
        subscribe_body(
            &format!("http://{root_addr}/root"),
            &topic_filter(SIMPLE, "tns:Alarms"),
        ),
    )
    .await;

    let fire = topic_header("{urn:ev}Alarms/Fire");
    assert_eq!(
        publish(&server, "urn:ev/AlarmRaised", &fire, ALARM).await,
        1,
        "only the path"
    );
    let got = next(&mut raw_rx, Duration::from_secs(5)).await;
    assert_eq!(got.soap_action.as_deref(), Some("\"urn:ev/AlarmRaised\""));
    let note = got.envelope();
    assert_eq!(note.version(), SoapVersion::V11);
    assert_eq!(
        note.operation(),
        Some(&QName::new("urn:ev", "Alarm")),
        "raw: {}",
        got.body
    );
    assert!(!got.body.contains("Notify"), "{}", got.body);
    assert_eq!(header_text(&note, "urn:app", "Key").as_deref(), Some("k-1"));

    let flood = topic_header("{urn:ev}Alarms/Flood");
    assert_eq!(
        publish(&server, "urn:ev/AlarmRaised", &flood, ALARM).await,
        0
    );
    let root = topic_header("{urn:ev}Alarms");
    assert_eq!(
        publish(&server, "urn:ev/AlarmRaised", &root, ALARM).await,
        1
    );
    let got = next(&mut root_rx, Duration::from_secs(5)).await;
    assert_eq!(
        got.soap_action.as_deref(),
        Some(&*format!("\"{BW}/NotificationConsumer/Notify\""))
    );
    assert!(
        got.body.contains(&format!(
            r#"<wsnt:Topic Dialect="{SIMPLE}" xmlns:tns="urn:ev">tns:Alarms</wsnt:Topic>"#
        )),
        "{}",
        got.body
    );
    nothing(&mut raw_rx, Duration::from_millis(200)).await;
}

#[tokio::test]
async fn a_message_content_filter_takes_only_the_events_its_xpath_selects() {
    let server = source("").await;
    let (addr, mut rx) = sink(Duration::ZERO).await;
    let content = r#"<wsnt:Filter><wsnt:MessageContent Dialect="http://www.w3.org/TR/1999/REC-xpath-19991116" xmlns:x="urn:ev">x:c &gt; 25</wsnt:MessageContent></wsnt:Filter>"#;
    subscribe(
        &server,
        SoapVersion::V12,
        subscribe_body(&format!("http://{addr}/hot"), content),
    )
    .await;
    let cool = r#"<ev:Temperature xmlns:ev="urn:ev"><ev:c>21.5</ev:c></ev:Temperature>"#;
    let hot = r#"<ev:Temperature xmlns:ev="urn:ev"><ev:c>31</ev:c></ev:Temperature>"#;
    assert_eq!(publish(&server, "urn:ev/Reading", "", cool).await, 0);
    assert_eq!(publish(&server, "urn:ev/Reading", "", hot).await, 1);
    let got = next(&mut rx, Duration::from_secs(5)).await;
    assert!(got.body.contains("<ev:c>31</ev:c>"), "{}", got.body);
    assert!(got.body.contains("wsnt:Notify"), "{}", got.body);
    nothing(&mut rx, Duration::from_millis(200)).await;
}

#[tokio::test]
async fn renew_and_unsubscribe_manage_the_subscription() {
    let server = source("").await;
    let (addr, _rx) = sink(Duration::ZERO).await;
    let (answer, id) = subscribe(
        &server,
        SoapVersion::V12,
        subscribe_body(&format!("http://{addr}/c"), ""),
    )
    .await;
    let text = answer.text();
    let granted = time_of(text, "wsnt:TerminationTime") - time_of(text, "wsnt:CurrentTime");
    assert_eq!(granted, 3_600_000, "absent = the source's maximum: {text}");

    let renew = manage(
        &server,
        "Renew",
        &id,
        &format!(r#"<wsnt:Renew xmlns:wsnt="{WSNT}"><wsnt:TerminationTime>PT120S</wsnt:TerminationTime></wsnt:Renew>"#),
    )
    .await;
    assert_eq!(renew.status, 200, "{}", renew.text());
    let env = renew.envelope();
    assert_eq!(
        header_text(&env, WSA, "Action").as_deref(),
        Some(&*format!("{BW}/SubscriptionManager/RenewResponse"))
    );
    assert_eq!(env.operation(), Some(&QName::new(WSNT, "RenewResponse")));
    let t = renew.text();
    assert_eq!(
        time_of(t, "wsnt:TerminationTime") - time_of(t, "wsnt:CurrentTime"),
        120_000,
        "{t}"
    );

    let at = u64::try_from(now_ms() + 300_000).unwrap();
    let wanted = datetime::format_utc_millis(at);
    let renew = manage(
        &server,
        "Renew",
        &id,
        &format!(r#"<wsnt:Renew xmlns:wsnt="{WSNT}"><wsnt:TerminationTime>{wanted}</wsnt:TerminationTime></wsnt:Renew>"#),
    )
    .await;
    assert_eq!(renew.status, 200, "{}", renew.text());
    let granted = time_of(renew.text(), "wsnt:TerminationTime");
    assert!(
        (granted - i64::try_from(at).unwrap()).abs() < 1000,
        "{}",
        renew.text()
    );

    let gone = manage(
        &server,
        "Unsubscribe",
        &id,
        &format!(r#"<wsnt:Unsubscribe xmlns:wsnt="{WSNT}"/>"#),
    )
    .await;
    assert_eq!(gone.status, 200, "{}", gone.text());
    let env = gone.envelope();
    assert_eq!(
        header_text(&env, WSA, "Action").as_deref(),
        Some(&*format!("{BW}/SubscriptionManager/UnsubscribeResponse"))
    );
    assert_eq!(
        env.operation(),
        Some(&QName::new(WSNT, "UnsubscribeResponse"))
    );
    assert_eq!(publish(&server, "urn:ev/T", "", TEMPERATURE).await, 0);
    let again = manage(
        &server,
        "Unsubscribe",
        &id,
        &format!(r#"<wsnt:Unsubscribe xmlns:wsnt="{WSNT}"/>"#),
    )
    .await;
    again.assert_fault(FaultKind::ResourceUnknown, SoapVersion::V12);
}

/// Asserts `answer` is `kind` carrying the BaseFault element `element` (prefixed name) in
/// its detail, the WSN fault action and `wsa:RelatesTo`.
fn assert_wsn_fault(answer: &Answer, kind: FaultKind, soap: SoapVersion, element: &str) {
    answer.assert_fault(kind, soap);
    let text = answer.text();
    assert!(
        text.contains(&format!("<{element} xmlns:")),
        "{element}: {text}"
    );
    assert!(text.contains("<wsrf-bf:Timestamp>"), "{text}");
    assert!(
        text.contains(r#"<wsrf-bf:Description xml:lang="en">"#),
        "{text}"
    );
    let env = answer.envelope();
    assert_eq!(
        header_text(&env, WSA, "Action").as_deref(),
        Some(FAULT_ACTION),
        "{text}"
    );
    assert_eq!(
        header_text(&env, WSA, "RelatesTo").as_deref(),
        Some("urn:uuid:req-1"),
        "{text}"
    );
}

#[tokio::test]
async fn each_fault_names_the_specification_element() {
    let server = source("").await;
    let (addr, _rx) = sink(Duration::ZERO).await;
    let consumer = format!("http://{addr}/c");
    let soap = SoapVersion::V12;
    let subscribe_action = format!("{BW}/NotificationProducer/SubscribeRequest");
    let full = "http://docs.oasis-open.org/wsn/t-1/TopicExpression/Full";
    let subscribe_cases = [
        (topic_filter(full, "tns:Alarms//."), FaultKind::TopicExpressionDialectUnknown, "wsnt:TopicExpressionDialectUnknownFault"),
        (topic_filter(SIMPLE, "tns:Alarms/Fire"), FaultKind::InvalidTopicExpression, "wsnt:InvalidTopicExpressionFault"),
        (topic_filter(CONCRETE, "nope:Alarms"), FaultKind::InvalidTopicExpression, "wsnt:InvalidTopicExpressionFault"),
        (
            format!(r#"<wsnt:Filter><wsnt:TopicExpression Dialect="{SIMPLE}">Alarms</wsnt:TopicExpression></wsnt:Filter>"#),
            FaultKind::TopicNotSupported,
            "wsnt:TopicNotSupportedFault",
        ),
        (
            r#"<wsnt:Filter><wsnt:ProducerProperties Dialect="http://www.w3.org/TR/1999/REC-xpath-19991116">boolean(//x)</wsnt:ProducerProperties></wsnt:Filter>"#.to_owned(),
            FaultKind::InvalidFilter,
            "wsnt:InvalidFilterFault",
        ),
        ("<wsnt:InitialTerminationTime>-PT5S</wsnt:InitialTerminationTime>".to_owned(), FaultKind::UnacceptableInitialTerminationTime, "wsnt:UnacceptableInitialTerminationTimeFault"),
        ("<wsnt:InitialTerminationTime>PT2H</wsnt:InitialTerminationTime>".to_owned(), FaultKind::UnacceptableInitialTerminationTime, "wsnt:UnacceptableInitialTerminationTimeFault"),
        ("<wsnt:InitialTerminationTime>soon</wsnt:InitialTerminationTime>".to_owned(), FaultKind::UnacceptableInitialTerminationTime, "wsnt:UnacceptableInitialTerminationTimeFault"),
        (
            "<wsnt:SubscriptionPolicy><app:Priority>high</app:Priority></wsnt:SubscriptionPolicy>".to_owned(),
            FaultKind::UnrecognizedPolicyRequest,
            "wsnt:UnrecognizedPolicyRequestFault",
        ),
        (
            r#"<wsnt:Filter><wsnt:MessageContent Dialect="http://www.w3.org/TR/1999/REC-xpath-19991116" xmlns:ev="urn:ev">//ev:c[</wsnt:MessageContent></wsnt:Filter>"#.to_owned(),
            FaultKind::InvalidMessageContentExpression,
            "wsnt:InvalidMessageContentExpressionFault",
        ),
    ];
    for (extra, kind, element) in subscribe_cases {
        let answer = call(
            &server,
            soap,
            &subscribe_action,
            "",
            &subscribe_body(&consumer, &extra),
        )
        .await;
        assert_wsn_fault(&answer, kind, soap, element);
        let (ns, prefix, local) = kind.subcode();
        assert_eq!((ns, prefix), (WSNT, "wsnt"));
        assert!(
            answer.text().contains(&format!(
                r#"<env:Value xmlns:wsnt="{WSNT}">wsnt:{local}</env:Value>"#
            )),
            "{}",
            answer.text()
        );
    }
    let answer = call(
        &server,
        soap,
        &subscribe_action,
        "",
        &subscribe_body(
            &consumer,
            "<wsnt:Filter><wsnt:ProducerProperties/></wsnt:Filter>",
        ),
    )
    .await;
    assert!(
        answer.text().contains(&format!(
            r#"<wsnt:UnknownFilter xmlns:q0="{WSNT}">q0:ProducerProperties</wsnt:UnknownFilter>"#
        )),
        "{}",
        answer.text()
    );
    let answer = call(
        &server,
        soap,
        &subscribe_action,
        "",
        &subscribe_body(
            &consumer,
            "<wsnt:InitialTerminationTime>PT2H</wsnt:InitialTerminationTime>",
        ),
    )
    .await;
    assert!(
        answer.text().contains("<wsnt:MaximumTime>"),
        "{}",
        answer.text()
    );
    let answer = call(&server, soap, &subscribe_action, "", &subscribe_body(
        &consumer,
        r#"<wsnt:Filter><wsnt:MessageContent Dialect="http://www.w3.org/TR/1999/REC-xpath-19991116">//zz:c</wsnt:MessageContent></wsnt:Filter>"#,
    ))
    .await;
    assert!(
        answer
            .text()
            .contains("InvalidMessageContentExpressionFault")
            && answer.text().contains("not declared"),
        "{}",
        answer.text()
    );

    // SOAP 1.1: the fault element's name is the faultcode; an unusable consumer.
    let answer = call(
        &server,
        SoapVersion::V11,
        &subscribe_action,
        "",
        &subscribe_body("ftp://files.example/c", ""),
    )
    .await;
    assert_wsn_fault(
        &answer,
        FaultKind::SubscribeCreationFailed,
        SoapVersion::V11,
        "wsnt:SubscribeCreationFailedFault",
    );
    assert!(
        answer.text().contains(&format!(
            r#"<faultcode xmlns:wsnt="{WSNT}">wsnt:SubscribeCreationFailedFault</faultcode>"#
        )),
        "{}",
        answer.text()
    );

    let (_, id) = subscribe(&server, soap, subscribe_body(&consumer, "")).await;
    let renew = |t: &str| {
        format!(
            r#"<wsnt:Renew xmlns:wsnt="{WSNT}"><wsnt:TerminationTime>{t}</wsnt:TerminationTime></wsnt:Renew>"#
        )
    };
    let manager_cases = [
        (
            "Renew",
            "urn:uuid:nobody".to_owned(),
            renew("PT60S"),
            FaultKind::ResourceUnknown,
            "wsrf-r:ResourceUnknownFault",
        ),
        (
            "Renew",
            id.clone(),
            renew("2001-01-01T00:00:00Z"),
            FaultKind::UnacceptableTerminationTime,
            "wsnt:UnacceptableTerminationTimeFault",
        ),
        (
            "Renew",
            id.clone(),
            format!(r#"<wsnt:Renew xmlns:wsnt="{WSNT}"/>"#),
            FaultKind::UnacceptableTerminationTime,
            "wsnt:UnacceptableTerminationTimeFault",
        ),
        (
            "PauseSubscription",
            id.clone(),
            format!(r#"<wsnt:PauseSubscription xmlns:wsnt="{WSNT}"/>"#),
            FaultKind::NotificationOperationUnavailable,
            "wsnt:PauseFailedFault",
        ),
        (
            "ResumeSubscription",
            id.clone(),
            format!(r#"<wsnt:ResumeSubscription xmlns:wsnt="{WSNT}"/>"#),
            FaultKind::NotificationOperationUnavailable,
            "wsnt:ResumeFailedFault",
        ),
        (
            "PauseSubscription",
            "urn:uuid:nobody".to_owned(),
            format!(r#"<wsnt:PauseSubscription xmlns:wsnt="{WSNT}"/>"#),
            FaultKind::ResourceUnknown,
            "wsrf-r:ResourceUnknownFault",
        ),
    ];
    for (op, who, body, kind, element) in manager_cases {
        let answer = manage(&server, op, &who, &body).await;
        assert_wsn_fault(&answer, kind, soap, element);
    }
    let current = call(
        &server,
        soap,
        &format!("{BW}/NotificationProducer/GetCurrentMessageRequest"),
        "",
        &format!(r#"<wsnt:GetCurrentMessage xmlns:wsnt="{WSNT}"><wsnt:Topic Dialect="{SIMPLE}" xmlns:tns="urn:ev">tns:Alarms</wsnt:Topic></wsnt:GetCurrentMessage>"#),
    )
    .await;
    assert_wsn_fault(
        &current,
        FaultKind::NotificationOperationUnavailable,
        soap,
        "wsnt:NoCurrentMessageOnTopicFault",
    );
    // The subscription the refused Renews named is untouched.
    assert_eq!(publish(&server, "urn:ev/T", "", TEMPERATURE).await, 1);
}

#[tokio::test]
async fn subscriptions_expire_on_time_and_renewal_keeps_them() {
    let server = source("").await;
    let (addr, _rx) = sink(Duration::ZERO).await;
    let short = "<wsnt:InitialTerminationTime>PT0.4S</wsnt:InitialTerminationTime>";
    let consumer = format!("http://{addr}/c");
    let (_, kept) = subscribe(&server, SoapVersion::V12, subscribe_body(&consumer, short)).await;
    let (_, lapsed) = subscribe(&server, SoapVersion::V12, subscribe_body(&consumer, short)).await;
    let renew = format!(
        r#"<wsnt:Renew xmlns:wsnt="{WSNT}"><wsnt:TerminationTime>PT30S</wsnt:TerminationTime></wsnt:Renew>"#
    );
    let renewed = manage(&server, "Renew", &kept, &renew).await;
    assert_eq!(renewed.status, 200, "{}", renewed.text());
    tokio::time::sleep(Duration::from_millis(700)).await;
    let late = manage(&server, "Renew", &lapsed, &renew).await;
    assert_wsn_fault(
        &late,
        FaultKind::ResourceUnknown,
        SoapVersion::V12,
        "wsrf-r:ResourceUnknownFault",
    );
    assert_eq!(publish(&server, "urn:ev/T", "", TEMPERATURE).await, 1);
}

#[tokio::test]
async fn a_notify_posted_to_the_source_publishes_each_message() {
    let server = source("").await;
    let (addr, mut rx) = sink(Duration::ZERO).await;
    subscribe(
        &server,
        SoapVersion::V12,
        subscribe_body(
            &format!("http://{addr}/c"),
            &topic_filter(CONCRETE, "tns:Alarms/Fire"),
        ),
    )
    .await;
    let message = |topic: &str, room: &str| {
        format!(
            r#"<wsnt:NotificationMessage><wsnt:Topic Dialect="{CONCRETE}" xmlns:t="urn:ev">{topic}</wsnt:Topic><wsnt:Message><ev:Alarm xmlns:ev="urn:ev"><ev:room>{room}</ev:room></ev:Alarm></wsnt:Message></wsnt:NotificationMessage>"#
        )
    };
    let notify = format!(
        r#"<wsnt:Notify xmlns:wsnt="{WSNT}">{}{}</wsnt:Notify>"#,
        message("t:Alarms/Flood", "7"),
        message("t:Alarms/Fire", "12")
    );
    let answer = call(
        &server,
        SoapVersion::V12,
        &format!("{BW}/NotificationConsumer/Notify"),
        "",
        &notify,
    )
    .await;
    assert_eq!(answer.status, 202, "{}", answer.text());
    assert!(answer.body.is_empty(), "{}", answer.text());
    let got = next(&mut rx, Duration::from_secs(5)).await;
    assert!(got.body.contains("<ev:room>12</ev:room>"), "{}", got.body);
    assert!(
        got.body.contains(&format!(
            r#"<wsnt:Topic Dialect="{CONCRETE}" xmlns:tns="urn:ev">tns:Alarms/Fire</wsnt:Topic>"#
        )),
        "{}",
        got.body
    );
    nothing(&mut rx, Duration::from_millis(300)).await;

    let bad = format!(
        r#"<wsnt:Notify xmlns:wsnt="{WSNT}"><wsnt:NotificationMessage><wsnt:Topic Dialect="urn:other">x</wsnt:Topic><wsnt:Message><e/></wsnt:Message></wsnt:NotificationMessage></wsnt:Notify>"#
    );
    let answer = call(
        &server,
        SoapVersion::V12,
        &format!("{BW}/NotificationConsumer/Notify"),
        "",
        &bad,
    )
    .await;
    assert_wsn_fault(
        &answer,
        FaultKind::TopicExpressionDialectUnknown,
        SoapVersion::V12,
        "wsnt:TopicExpressionDialectUnknownFault",
    );
}

#[tokio::test]
async fn a_dead_consumer_loses_its_subscription_after_the_retries() {
    let server = source("").await;
    let dead = closed_port().await;
    subscribe(
        &server,
        SoapVersion::V12,
        subscribe_body(&format!("http://{dead}/c"), ""),
    )
    .await;
    assert_eq!(publish(&server, "urn:ev/T", "", TEMPERATURE).await, 1);
    let started = Instant::now();
    loop {
        tokio::time::sleep(Duration::from_millis(100)).await;
        if publish(&server, "urn:ev/T", "", TEMPERATURE).await == 0 {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "still subscribed"
        );
    }
}

#[tokio::test]
async fn subscriptions_survive_a_restart() {
    let dir = ScratchDir::new("wsn");
    let path = dir.join("subs.redb");
    let extra = format!("store = {:?}", path.display().to_string());
    let (addr, mut rx) = sink(Duration::ZERO).await;
    let id = {
        let mut server = source(&extra).await;
        let (_, id) = subscribe(
            &server,
            SoapVersion::V12,
            subscribe_body(
                &format!("http://{addr}/c"),
                &topic_filter(SIMPLE, "tns:Temperature"),
            ),
        )
        .await;
        server.shutdown().await.unwrap().unwrap();
        id
    };
    // The first server's store closes once its last task lets go of it.
    let mut reopened = false;
    for _ in 0..50 {
        let text = format!(
            "[server]\nlisten = \"127.0.0.1:0\"\n[[service]]\nname = \"events\"\npath = \"/events\"\nbuiltin = \"event-source\"\nnotify_allow = [\"127.0.0.1\"]\n{extra}\n"
        );
        let config = lather_config::Config::from_toml(&text, "test.toml").unwrap();
        match lather_http::Server::bind(&config).await {
            Ok(probe) => {
                drop(probe);
                reopened = true;
                break;
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
    assert!(reopened, "the store could be reopened");
    let server = source(&extra).await;
    assert_eq!(
        publish(&server, "urn:ev/T", "", PRESSURE).await,
        0,
        "the filter survived"
    );
    assert_eq!(publish(&server, "urn:ev/T", "", TEMPERATURE).await, 1);
    let got = next(&mut rx, Duration::from_secs(5)).await;
    assert!(got.body.contains(&id), "{}", got.body);
    assert!(
        got.body.contains("<wsnt:Notify"),
        "still wrapped: {}",
        got.body
    );
    assert_eq!(
        header_text(&got.envelope(), "urn:app", "Key").as_deref(),
        Some("k-1")
    );
    let renew = manage(
        &server,
        "Renew",
        &id,
        &format!(r#"<wsnt:Renew xmlns:wsnt="{WSNT}"><wsnt:TerminationTime>PT60S</wsnt:TerminationTime></wsnt:Renew>"#),
    )
    .await;
    assert_eq!(renew.status, 200, "{}", renew.text());
    drop(server);
}
