//! `wsa`: each request rule in both WS-Addressing versions, the fault codes as they go on
//! the wire in both SOAP versions, and the headers it adds to answers.

use lather_envelope::{
    Envelope, EnvelopeBuilder, Fault, FaultKind, Limits, QName, SoapVersion, WSA04_NS, WSA10_NS,
};
use lather_handlers::WsAddressing;
use lather_pipeline::{
    Context, Direction, Handler, Message, Options, Outcome, Plan, Step, Verdict, run,
};
use std::sync::Arc;

const ACTION: &str = "urn:quotes#getQuote";

/// The two addressing versions' namespaces.
const VERSIONS: [&str; 2] = [WSA10_NS, WSA04_NS];

/// A text header `<wsa:local>text</wsa:local>` in namespace `ns`.
fn text(ns: &str, local: &str, text: &str) -> String {
    format!(r#"<wsa:{local} xmlns:wsa="{ns}">{text}</wsa:{local}>"#)
}

/// An endpoint reference header with `address` (none if `None`).
fn epr(ns: &str, local: &str, address: Option<&str>) -> String {
    let address = address.map_or(String::new(), |a| format!("<wsa:Address>{a}</wsa:Address>"));
    format!(r#"<wsa:{local} xmlns:wsa="{ns}">{address}</wsa:{local}>"#)
}

fn anonymous(ns: &str) -> String {
    if ns == WSA10_NS {
        format!("{ns}/anonymous")
    } else {
        format!("{ns}/role/anonymous")
    }
}

/// The headers of a valid request in `ns`: To, Action, MessageID.
fn valid(ns: &str) -> Vec<String> {
    vec![
        text(ns, "To", "http://example.org/quotes"),
        text(ns, "Action", ACTION),
        text(
            ns,
            "MessageID",
            "urn:uuid:6b29fc40-ca47-4e0a-8b5f-2d1e9a1b1c01",
        ),
    ]
}

fn envelope(soap: SoapVersion, headers: &[String]) -> Envelope {
    let builder = headers.iter().fold(EnvelopeBuilder::new(soap), |b, h| {
        b.header(h.clone().into())
    });
    let bytes = builder
        .body(r#"<q:getQuote xmlns:q="urn:quotes"><q:symbol>LATH</q:symbol></q:getQuote>"#.into())
        .build();
    Envelope::parse(bytes, &Limits::default()).unwrap()
}

fn context(direction: Direction, action: Option<&str>, request: Option<Envelope>) -> Context {
    Context {
        id: 1,
        service: "quotes".into(),
        action: action.map(str::to_owned),
        direction,
        request,
        ..Default::default()
    }
}

/// The handler's verdict on a request with `headers` and SOAP action `action`.
async fn check_with(
    handler: &WsAddressing,
    soap: SoapVersion,
    headers: &[String],
    action: Option<&str>,
) -> Result<(), Fault> {
    let message = Message::new(
        envelope(soap, headers),
        context(Direction::Request, action, None),
    );
    match handler.call(&message).await {
        Verdict::Continue(patch) => {
            assert!(patch.is_empty(), "requests are not changed");
            Ok(())
        }
        Verdict::Fault(fault) => Err(fault),
        Verdict::Respond(_) => panic!("wsa never answers itself"),
    }
}

/// Checks a request in both SOAP versions (the verdict must not depend on it) and returns
/// the fault, if any.
async fn check(headers: &[String], action: Option<&str>) -> Option<Fault> {
    let handler = WsAddressing::default();
    let v11 = check_with(&handler, SoapVersion::V11, headers, action).await;
    let v12 = check_with(&handler, SoapVersion::V12, headers, action).await;
    assert_eq!(v11, v12);
    v11.err()
}

/// Asserts a fault of `kind` about the header `{ns}local`.
fn assert_fault(fault: Option<Fault>, kind: FaultKind, ns: &str, local: &str) {
    let fault = fault.unwrap_or_else(|| panic!("expected {kind:?}, the request passed"));
    assert_eq!(fault.kind(), kind, "{fault}");
    assert_eq!(
        fault.problem_header_name(),
        Some(&QName::new(ns, local)),
        "{fault}"
    );
}

/// The fault kinds per version: (missing, duplicate, no address, generic invalid).
fn kinds(ns: &str) -> (FaultKind, FaultKind, FaultKind, FaultKind) {
    if ns == WSA10_NS {
        (
            FaultKind::MessageAddressingHeaderRequired,
            FaultKind::InvalidCardinality,
            FaultKind::MissingAddressInEpr,
            FaultKind::InvalidAddressingHeader,
        )
    } else {
        (
            FaultKind::MessageInformationHeaderRequired,
            FaultKind::InvalidMessageInformationHeader,
            FaultKind::InvalidMessageInformationHeader,
            FaultKind::InvalidMessageInformationHeader,
        )
    }
}

// ===== request flow =====

#[tokio::test]
async fn valid_requests_pass_in_both_versions() {
    for ns in VERSIONS {
        let mut headers = valid(ns);
        headers.push(epr(ns, "ReplyTo", Some("http://client.example/cb")));
        headers.push(epr(ns, "FaultTo", Some(&anonymous(ns))));
        headers.push(epr(ns, "From", Some("http://client.example/")));
        headers.push(text(ns, "RelatesTo", "urn:uuid:earlier"));
        assert_eq!(check(&headers, Some(ACTION)).await, None, "{ns}");
        assert_eq!(check(&headers, None).await, None, "{ns}");
    }
}

#[tokio::test]
async fn requests_without_addressing_pass_unless_required() {
    assert_eq!(check(&[], Some(ACTION)).await, None);
    let strict = WsAddressing::new(true, None);
    let fault = check_with(&strict, SoapVersion::V12, &[], Some(ACTION))
        .await
        .err();
    assert_fault(
        fault,
        FaultKind::MessageAddressingHeaderRequired,
        WSA10_NS,
        "Action",
    );
    // Headers of another namespace are not addressing headers.
    let other = vec![text("urn:other", "Action", ACTION)];
    assert!(
        check_with(&strict, SoapVersion::V11, &other, None)
            .await
            .is_err()
    );
}

#[tokio::test]
async fn action_is_required_in_both_versions() {
    for ns in VERSIONS {
        let headers = vec![
            text(ns, "To", "http://example.org/quotes"),
            text(ns, "MessageID", "urn:uuid:1"),
        ];
        let fault = check(&headers, Some(ACTION)).await;
        assert_fault(fault, kinds(ns).0, ns, "Action");
    }
}

#[tokio::test]
async fn the_2004_submission_requires_to() {
    let headers = vec![text(WSA04_NS, "Action", ACTION)];
    assert_fault(
        check(&headers, None).await,
        FaultKind::MessageInformationHeaderRequired,
        WSA04_NS,
        "To",
    );
    // 1.0 defaults an absent To to anonymous.
    let headers = vec![text(WSA10_NS, "Action", ACTION)];
    assert_eq!(check(&headers, None).await, None);
}

#[tokio::test]
async fn repeated_headers_are_refused_in_both_versions() {
    for ns in VERSIONS {
        for local in ["To", "From", "ReplyTo", "FaultTo", "Action", "MessageID"] {
            let mut headers = valid(ns);
            let extra = if ["From", "ReplyTo", "FaultTo"].contains(&local) {
                epr(ns, local, Some(&anonymous(ns)))
            } else {
                text(ns, local, ACTION)
            };
            headers.push(extra.clone());
            headers.push(extra);
            let fault = check(&headers, None).await;
            assert_fault(fault, kinds(ns).1, ns, local);
        }
    }
}

#[tokio::test]
async fn relates_to_may_repeat_only_with_distinct_relationships() {
    let ns = WSA10_NS;
    let typed = |t: &str| {
        format!(
            r#"<wsa:RelatesTo xmlns:wsa="{ns}" RelationshipType="{t}">urn:uuid:2</wsa:RelatesTo>"#
        )
    };
    let mut distinct = valid(ns);
    distinct.push(text(ns, "RelatesTo", "urn:uuid:1"));
    distinct.push(typed("urn:example:follows"));
    assert_eq!(check(&distinct, None).await, None);
    let mut same = valid(ns);
    same.push(text(ns, "RelatesTo", "urn:uuid:1"));
    same.push(typed(&format!("{ns}/reply")));
    assert_fault(
        check(&same, None).await,
        FaultKind::InvalidCardinality,
        ns,
        "RelatesTo",
    );
}

#[tokio::test]
async fn endpoint_references_need_an_address() {
    for ns in VERSIONS {
        for local in ["ReplyTo", "FaultTo", "From"] {
            let mut headers = valid(ns);
            headers.push(epr(ns, local, None));
            assert_fault(check(&headers, None).await, kinds(ns).2, ns, local);
            // An Address in another namespace is not the EPR's address.
            let mut headers = valid(ns);
            headers.push(format!(
                r#"<wsa:{local} xmlns:wsa="{ns}"><o:Address xmlns:o="urn:o">http://x/</o:Address></wsa:{local}>"#
            ));
            assert_fault(check(&headers, None).await, kinds(ns).2, ns, local);
        }
    }
}

#[tokio::test]
async fn message_id_is_required_when_a_reply_goes_to_an_endpoint() {
    let ns = WSA10_NS;
    let base = vec![text(ns, "Action", ACTION)];
    for local in ["ReplyTo", "FaultTo"] {
        let mut headers = base.clone();
        headers.push(epr(ns, local, Some("http://client.example/cb")));
        assert_fault(
            check(&headers, None).await,
            FaultKind::MessageAddressingHeaderRequired,
            ns,
            "MessageID",
        );
        // Anonymous and none need no MessageID in 1.0.
        for address in [anonymous(ns), format!("{ns}/none")] {
            let mut headers = base.clone();
            headers.push(epr(ns, local, Some(&address)));
            assert_eq!(check(&headers, None).await, None, "{address}");
        }
    }
    // The 2004/08 submission: MessageID "MUST be present if wsa:ReplyTo or wsa:FaultTo is
    // present", whatever the address.
    let ns = WSA04_NS;
    let headers = vec![
        text(ns, "To", "http://example.org/quotes"),
        text(ns, "Action", ACTION),
        epr(ns, "ReplyTo", Some(&anonymous(ns))),
    ];
    assert_fault(
        check(&headers, None).await,
        FaultKind::MessageInformationHeaderRequired,
        ns,
        "MessageID",
    );
}

#[tokio::test]
async fn the_action_must_match_the_soap_action() {
    for ns in VERSIONS {
        let headers = valid(ns);
        let expected = if ns == WSA10_NS {
            FaultKind::ActionMismatch
        } else {
            FaultKind::InvalidMessageInformationHeader
        };
        assert_fault(
            check(&headers, Some("urn:quotes#other")).await,
            expected,
            ns,
            "Action",
        );
        // An empty SOAP action (`SOAPAction: ""`) says nothing.
        assert_eq!(check(&headers, Some("")).await, None);
    }
}

#[tokio::test]
async fn mixing_the_versions_is_refused_in_the_first_ones_terms() {
    let headers = vec![
        text(WSA10_NS, "Action", ACTION),
        text(WSA04_NS, "To", "http://example.org/quotes"),
    ];
    assert_fault(
        check(&headers, None).await,
        FaultKind::InvalidAddressingHeader,
        WSA04_NS,
        "To",
    );
    let headers = vec![
        text(WSA04_NS, "To", "http://example.org/quotes"),
        text(WSA10_NS, "Action", ACTION),
    ];
    assert_fault(
        check(&headers, None).await,
        FaultKind::InvalidMessageInformationHeader,
        WSA10_NS,
        "Action",
    );
}

#[tokio::test]
async fn headers_that_must_hold_an_iri_refuse_elements_and_emptiness() {
    for ns in VERSIONS {
        for local in ["Action", "To", "MessageID"] {
            let mut headers: Vec<String> = valid(ns)
                .into_iter()
                .filter(|h| !h.starts_with(&format!("<wsa:{local} ")))
                .collect();
            headers.push(text(ns, local, "<x:y xmlns:x=\"urn:x\"/>"));
            assert_fault(check(&headers, None).await, kinds(ns).3, ns, local);
            let mut headers: Vec<String> = valid(ns)
                .into_iter()
                .filter(|h| !h.starts_with(&format!("<wsa:{local} ")))
                .collect();
            headers.push(text(ns, local, "  "));
            assert_fault(check(&headers, None).await, kinds(ns).3, ns, local);
        }
    }
}

#[tokio::test]
async fn faults_relate_to_the_request_message_id() {
    let mut headers = valid(WSA10_NS);
    headers.push(text(WSA10_NS, "To", "http://example.org/again"));
    let fault = check(&headers, None).await.unwrap();
    assert_eq!(
        fault.relates_to_id(),
        Some("urn:uuid:6b29fc40-ca47-4e0a-8b5f-2d1e9a1b1c01")
    );
}

// ===== the codes on the wire =====

/// The text of every `env:Value` under the SOAP 1.2 `env:Code` of `xml`, outermost first,
/// with each value's prefix resolved: `{ns}local`.
fn soap12_codes(xml: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = xml;
    while let Some(at) = rest.find("<env:Value") {
        let tag_end = rest[at..].find('>').unwrap() + at;
        let tag = &rest[at..tag_end];
        let value_end = rest[tag_end..].find("</env:Value>").unwrap() + tag_end;
        let value = &rest[tag_end + 1..value_end];
        let (prefix, local) = value.split_once(':').unwrap();
        let ns = if prefix == "env" {
            lather_envelope::SOAP12_NS.to_owned()
        } else {
            let decl = format!("xmlns:{prefix}=\"");
            let start = tag.find(&decl).unwrap() + decl.len();
            tag[start..start + tag[start..].find('"').unwrap()].to_owned()
        };
        out.push(format!("{{{ns}}}{local}"));
        rest = &rest[value_end..];
    }
    out
}

/// The SOAP 1.1 `faultcode` of `xml`, its prefix resolved.
fn soap11_code(xml: &str) -> String {
    let at = xml.find("<faultcode").unwrap();
    let tag_end = xml[at..].find('>').unwrap() + at;
    let end = xml[tag_end..].find("</faultcode>").unwrap() + tag_end;
    let (prefix, local) = xml[tag_end + 1..end].split_once(':').unwrap();
    let decl = format!("xmlns:{prefix}=\"");
    let tag = &xml[at..tag_end];
    let start = tag.find(&decl).unwrap() + decl.len();
    format!(
        "{{{}}}{local}",
        &tag[start..start + tag[start..].find('"').unwrap()]
    )
}

#[tokio::test]
async fn fault_codes_go_on_the_wire_as_the_addressing_bindings_say() {
    let sender = format!("{{{}}}Sender", lather_envelope::SOAP12_NS);
    let w10 = |local: &str| format!("{{{WSA10_NS}}}{local}");
    let w04 = |local: &str| format!("{{{WSA04_NS}}}{local}");
    let mismatch = check(&valid(WSA10_NS), Some("urn:other")).await.unwrap();
    let missing04 = check(&[text(WSA04_NS, "To", "http://x/")], None)
        .await
        .unwrap();
    let mut twice = valid(WSA10_NS);
    twice.push(text(WSA10_NS, "MessageID", "urn:uuid:2"));
    let duplicate = check(&twice, None).await.unwrap();
    let cases = [
        (
            mismatch,
            vec![
                sender.clone(),
                w10("InvalidAddressingHeader"),
                w10("ActionMismatch"),
            ],
            w10("InvalidAddressingHeader"),
        ),
        (
            duplicate,
            vec![
                sender.clone(),
                w10("InvalidAddressingHeader"),
                w10("InvalidCardinality"),
            ],
            w10("InvalidAddressingHeader"),
        ),
        (
            missing04,
            vec![sender.clone(), w04("MessageInformationHeaderRequired")],
            w04("MessageInformationHeaderRequired"),
        ),
    ];
    for (fault, soap12, soap11) in cases {
        let v12 = fault.to_envelope(SoapVersion::V12);
        let v12 = std::str::from_utf8(&v12).unwrap();
        assert_eq!(soap12_codes(v12), soap12, "{v12}");
        assert_eq!(fault.http_status(SoapVersion::V12), 400);
        let v11 = fault.to_envelope(SoapVersion::V11);
        let v11 = std::str::from_utf8(&v11).unwrap();
        assert_eq!(soap11_code(v11), soap11, "{v11}");
        assert_eq!(fault.http_status(SoapVersion::V11), 500);
    }
}

// ===== response flow =====

/// Runs `handler` on `response` (an answer to `request`) and returns the answer as it leaves.
async fn answer(
    handler: WsAddressing,
    request: &Envelope,
    response: Envelope,
    direction: Direction,
) -> Envelope {
    let step = Arc::new(Step::new("wsa", Arc::new(handler), Options::default()));
    let plan = Plan::new(vec![vec![step]]).unwrap();
    let message = Message::new(
        response,
        context(direction, Some(ACTION), Some(request.clone())),
    );
    match run(&plan, message, &Limits::default()).await {
        Outcome::Continue(message) => message.into_envelope(),
        other => panic!("{other:?}"),
    }
}

/// The text of every header `{ns}local` of `envelope`.
fn texts(envelope: &Envelope, ns: &str, local: &str) -> Vec<String> {
    envelope
        .headers()
        .iter()
        .filter(|b| b.name().is(ns, local))
        .map(|b| envelope.header_text(b).unwrap())
        .collect()
}

/// Whether `text` is `urn:uuid:` and a lowercase version 4 UUID of the RFC 9562 variant.
fn is_urn_uuid_v4(text: &str) -> bool {
    let Some(uuid) = text.strip_prefix("urn:uuid:") else {
        return false;
    };
    let groups: Vec<&str> = uuid.split('-').collect();
    groups.iter().map(|g| g.len()).eq([8, 4, 4, 4, 12])
        && groups
            .iter()
            .all(|g| g.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')))
        && groups[2].starts_with('4')
        && groups[3].starts_with(['8', '9', 'a', 'b'])
}

#[tokio::test]
async fn answers_get_message_id_relates_to_action_and_to() {
    for soap in [SoapVersion::V11, SoapVersion::V12] {
        for ns in VERSIONS {
            let mut headers = valid(ns);
            headers.push(epr(ns, "ReplyTo", Some(&anonymous(ns))));
            let request = envelope(soap, &headers);
            let out = answer(
                WsAddressing::default(),
                &request,
                envelope(soap, &[]),
                Direction::Response,
            )
            .await;
            let ids = texts(&out, ns, "MessageID");
            assert_eq!(ids.len(), 1);
            assert!(is_urn_uuid_v4(&ids[0]), "{}", ids[0]);
            assert_eq!(
                texts(&out, ns, "RelatesTo"),
                ["urn:uuid:6b29fc40-ca47-4e0a-8b5f-2d1e9a1b1c01"]
            );
            assert_eq!(texts(&out, ns, "Action"), [format!("{ACTION}Response")]);
            assert_eq!(texts(&out, ns, "To"), [anonymous(ns)]);
            // Nothing of the other version.
            let other = VERSIONS.into_iter().find(|v| *v != ns).unwrap();
            assert!(out.headers().iter().all(|b| b.name().namespace() != other));
        }
    }
}

#[tokio::test]
async fn each_answer_gets_its_own_message_id() {
    let request = envelope(SoapVersion::V12, &valid(WSA10_NS));
    let handler = WsAddressing::default();
    let a = answer(
        handler.clone(),
        &request,
        envelope(SoapVersion::V12, &[]),
        Direction::Response,
    )
    .await;
    let b = answer(
        handler,
        &request,
        envelope(SoapVersion::V12, &[]),
        Direction::Response,
    )
    .await;
    assert_ne!(
        texts(&a, WSA10_NS, "MessageID"),
        texts(&b, WSA10_NS, "MessageID")
    );
}

#[tokio::test]
async fn headers_the_answer_has_are_not_added_twice() {
    let request = envelope(SoapVersion::V12, &valid(WSA10_NS));
    // As lather's echo answers: with a RelatesTo of its own.
    let response = envelope(
        SoapVersion::V12,
        &[
            text(
                WSA10_NS,
                "RelatesTo",
                "urn:uuid:6b29fc40-ca47-4e0a-8b5f-2d1e9a1b1c01",
            ),
            text(WSA10_NS, "MessageID", "urn:uuid:from-the-service"),
            text(WSA10_NS, "Action", "urn:quotes#quote"),
        ],
    );
    let out = answer(
        WsAddressing::default(),
        &request,
        response,
        Direction::Response,
    )
    .await;
    assert_eq!(texts(&out, WSA10_NS, "RelatesTo").len(), 1);
    assert_eq!(
        texts(&out, WSA10_NS, "MessageID"),
        ["urn:uuid:from-the-service"]
    );
    assert_eq!(texts(&out, WSA10_NS, "Action"), ["urn:quotes#quote"]);
}

#[tokio::test]
async fn the_configured_action_and_the_fault_action() {
    let mut headers = valid(WSA10_NS);
    headers.push(epr(
        WSA10_NS,
        "ReplyTo",
        Some("http://client.example/reply"),
    ));
    headers.push(epr(
        WSA10_NS,
        "FaultTo",
        Some("http://client.example/fault"),
    ));
    let request = envelope(SoapVersion::V11, &headers);
    let configured = WsAddressing::new(false, Some("urn:quotes#quote".into()));
    let out = answer(
        configured.clone(),
        &request,
        envelope(SoapVersion::V11, &[]),
        Direction::Response,
    )
    .await;
    assert_eq!(texts(&out, WSA10_NS, "Action"), ["urn:quotes#quote"]);
    assert_eq!(texts(&out, WSA10_NS, "To"), ["http://client.example/reply"]);
    // A fault answer: the fault action and the FaultTo address.
    let fault = Fault::new(FaultKind::Internal).to_envelope(SoapVersion::V11);
    let fault = Envelope::parse(fault, &Limits::default()).unwrap();
    let out = answer(configured, &request, fault, Direction::Response).await;
    assert_eq!(
        texts(&out, WSA10_NS, "Action"),
        ["http://www.w3.org/2005/08/addressing/fault"]
    );
    assert_eq!(texts(&out, WSA10_NS, "To"), ["http://client.example/fault"]);
    assert!(out.is_fault());
}

#[tokio::test]
async fn answers_to_requests_without_addressing_are_left_alone() {
    let request = envelope(SoapVersion::V12, &[]);
    let response = envelope(SoapVersion::V12, &[]);
    let before = response.as_bytes().clone();
    let out = answer(
        WsAddressing::default(),
        &request,
        response,
        Direction::Response,
    )
    .await;
    assert_eq!(out.as_bytes(), &before);
    // 1.0 without ReplyTo: no To (absent means anonymous).
    let request = envelope(SoapVersion::V12, &[text(WSA10_NS, "Action", ACTION)]);
    let out = answer(
        WsAddressing::default(),
        &request,
        envelope(SoapVersion::V12, &[]),
        Direction::Response,
    )
    .await;
    assert!(texts(&out, WSA10_NS, "To").is_empty());
    assert!(texts(&out, WSA10_NS, "RelatesTo").is_empty());
    assert_eq!(texts(&out, WSA10_NS, "MessageID").len(), 1);
}

#[test]
fn declares_the_addressing_headers_of_both_versions() {
    let access = WsAddressing::default().access();
    for ns in VERSIONS {
        for local in [
            "To",
            "From",
            "ReplyTo",
            "FaultTo",
            "Action",
            "MessageID",
            "RelatesTo",
        ] {
            let name = QName::new(ns, local);
            assert!(access.reads.has_header(&name) && access.writes.has_header(&name));
        }
    }
    assert!(!access.reads.has_body() && !access.writes.has_body());
}
