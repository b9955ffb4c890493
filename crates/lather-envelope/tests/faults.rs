//! Fault envelopes in SOAP 1.1 and 1.2: they parse back as faults, carry the catalogue's
//! codes, and map to the right HTTP status.

use crate::support;

use lather_envelope::{
    Envelope, Fault, FaultCode, FaultKind, LATHER_FAULT_NS, Limits, QName, SoapVersion,
};
use support::{Element, Item, NS11, NS12, canonical};

fn text_of(e: &Element) -> String {
    e.children
        .iter()
        .map(|c| match c {
            Item::Text(t) => t.as_str(),
            Item::Element(_) => "",
        })
        .collect()
}

fn fault_element(xml: &[u8], ns: &str) -> Element {
    let root = canonical(xml).unwrap();
    assert_eq!((root.ns.as_str(), root.local.as_str()), (ns, "Envelope"));
    let body = root.child(ns, "Body").expect("Body");
    assert_eq!(body.elements().len(), 1);
    body.child(ns, "Fault").expect("Fault").clone()
}

fn reparse(fault: &Fault, version: SoapVersion) -> Envelope {
    let bytes = fault.to_envelope(version);
    let env = Envelope::parse(bytes, &Limits::default()).expect("a fault envelope parses");
    assert_eq!(env.version(), version);
    assert!(env.is_fault(), "{}", fault.kind().spec().name);
    assert_eq!(
        env.operation(),
        Some(&QName::new(version.namespace(), "Fault"))
    );
    env
}

#[test]
fn every_fault_parses_back_in_both_versions() {
    for &kind in FaultKind::ALL {
        let fault = Fault::with_reason(kind, "because <reasons> & \"such\"");
        for version in [SoapVersion::V11, SoapVersion::V12] {
            reparse(&fault, version);
        }
    }
}

#[test]
fn soap12_fault_has_code_subcode_reason_and_detail() {
    let fault = Fault::with_reason(FaultKind::MalformedXml, "bad <xml> & more");
    let bytes = reparse(&fault, SoapVersion::V12).as_bytes().clone();
    let s = std::str::from_utf8(&bytes).unwrap();
    assert!(s.contains("<env:Value>env:Sender</env:Value>"), "{s}");
    assert!(
        s.contains(r#"<env:Subcode><env:Value xmlns:lf="urn:lather:fault">lf:MalformedXml</env:Value></env:Subcode>"#),
        "{s}"
    );

    let f = fault_element(&bytes, NS12);
    let code = f.child(NS12, "Code").unwrap();
    assert_eq!(text_of(code.child(NS12, "Value").unwrap()), "env:Sender");
    let sub = code.child(NS12, "Subcode").unwrap();
    assert_eq!(
        text_of(sub.child(NS12, "Value").unwrap()),
        "lf:MalformedXml"
    );
    let reason = f
        .child(NS12, "Reason")
        .unwrap()
        .child(NS12, "Text")
        .unwrap();
    assert_eq!(text_of(reason), "bad <xml> & more");
    assert_eq!(
        reason.attrs,
        [(
            lather_envelope::XML_NS.to_owned(),
            "lang".to_owned(),
            "en".to_owned()
        )]
    );
    let detail = f.child(NS12, "Detail").unwrap();
    let lf = detail.child(LATHER_FAULT_NS, "fault").unwrap();
    assert_eq!(
        lf.attrs,
        [
            (String::new(), "code".into(), "1001".into()),
            (String::new(), "name".into(), "MalformedXml".into()),
        ]
    );
}

#[test]
fn soap12_receiver_faults() {
    for kind in [FaultKind::UpstreamUnavailable, FaultKind::Internal] {
        let bytes = Fault::new(kind).to_envelope(SoapVersion::V12);
        let f = fault_element(&bytes, NS12);
        let code = f.child(NS12, "Code").unwrap();
        assert_eq!(text_of(code.child(NS12, "Value").unwrap()), "env:Receiver");
        let sub = code.child(NS12, "Subcode").unwrap();
        assert_eq!(
            text_of(sub.child(NS12, "Value").unwrap()),
            format!("lf:{}", kind.spec().name)
        );
        let reason = f
            .child(NS12, "Reason")
            .unwrap()
            .child(NS12, "Text")
            .unwrap();
        assert_eq!(text_of(reason), kind.spec().reason);
    }
}

#[test]
fn soap12_codes_without_subcode() {
    for (kind, code) in [
        (FaultKind::VersionMismatch, "env:VersionMismatch"),
        (FaultKind::MustUnderstand, "env:MustUnderstand"),
    ] {
        let bytes = Fault::new(kind).to_envelope(SoapVersion::V12);
        let f = fault_element(&bytes, NS12);
        let c = f.child(NS12, "Code").unwrap();
        assert_eq!(text_of(c.child(NS12, "Value").unwrap()), code);
        assert!(c.child(NS12, "Subcode").is_none());
    }
}

#[test]
fn soap12_version_mismatch_carries_upgrade() {
    let fault = Fault::new(FaultKind::VersionMismatch);
    let env = reparse(&fault, SoapVersion::V12);
    assert_eq!(env.headers().len(), 1);
    let upgrade = &env.headers()[0];
    assert_eq!(upgrade.name(), &QName::new(NS12, "Upgrade"));
    let root = canonical(env.as_bytes()).unwrap();
    let upgrade = root
        .child(NS12, "Header")
        .unwrap()
        .child(NS12, "Upgrade")
        .unwrap();
    let supported: Vec<&str> = upgrade
        .elements()
        .iter()
        .map(|e| {
            assert_eq!(
                (e.ns.as_str(), e.local.as_str()),
                (NS12, "SupportedEnvelope")
            );
            e.attrs[0].2.as_str()
        })
        .collect();
    assert_eq!(supported, ["v0:Envelope", "v1:Envelope"]);
    // Each qname's prefix is declared on its own element with a SOAP namespace.
    let s = std::str::from_utf8(env.as_bytes()).unwrap();
    assert!(s.contains(&format!(r#"qname="v0:Envelope" xmlns:v0="{NS12}""#)));
    assert!(s.contains(&format!(r#"qname="v1:Envelope" xmlns:v1="{NS11}""#)));
    // SOAP 1.1 has no Upgrade header.
    let env = reparse(&fault, SoapVersion::V11);
    assert!(env.headers().is_empty());
    assert!(!env.has_header_element());
}

#[test]
fn soap12_must_understand_lists_not_understood_blocks() {
    let names = vec![
        QName::new("urn:a&b", "First"),
        QName::new("urn:c", "Second"),
    ];
    let fault = Fault::new(FaultKind::MustUnderstand).not_understood(names.clone());
    let env = reparse(&fault, SoapVersion::V12);
    let got: Vec<&QName> = env.headers().iter().map(|h| h.name()).collect();
    assert_eq!(
        got,
        [
            &QName::new(NS12, "NotUnderstood"),
            &QName::new(NS12, "NotUnderstood")
        ]
    );
    let root = canonical(env.as_bytes()).unwrap();
    let header = root.child(NS12, "Header").unwrap();
    let qnames: Vec<&str> = header
        .elements()
        .iter()
        .map(|e| e.attrs[0].2.as_str())
        .collect();
    assert_eq!(qnames, ["q0:First", "q1:Second"]);
    let s = std::str::from_utf8(env.as_bytes()).unwrap();
    assert!(s.contains(r#"xmlns:q0="urn:a&amp;b""#), "{s}");
}

#[test]
fn soap11_faultcodes() {
    for (kind, code) in [
        (FaultKind::MalformedXml, "soap:Client"),
        (FaultKind::MessageTooLarge, "soap:Client"),
        (FaultKind::UnsupportedMediaType, "soap:Client"),
        (FaultKind::UpstreamUnavailable, "soap:Server"),
        (FaultKind::Internal, "soap:Server"),
        (FaultKind::VersionMismatch, "soap:VersionMismatch"),
        (FaultKind::MustUnderstand, "soap:MustUnderstand"),
    ] {
        let fault = Fault::with_reason(kind, "why & <how>");
        let env = reparse(&fault, SoapVersion::V11);
        let f = fault_element(env.as_bytes(), NS11);
        // SOAP 1.1 fault children are unqualified.
        let children: Vec<&str> = f.elements().iter().map(|e| e.local.as_str()).collect();
        assert_eq!(children, ["faultcode", "faultstring", "detail"]);
        assert!(f.elements().iter().all(|e| e.ns.is_empty()));
        assert_eq!(text_of(f.child("", "faultcode").unwrap()), code);
        assert_eq!(text_of(f.child("", "faultstring").unwrap()), "why & <how>");
        let detail = f.child("", "detail").unwrap();
        let lf = detail.child(LATHER_FAULT_NS, "fault").unwrap();
        assert_eq!(lf.attrs[0].2, kind.spec().id.to_string());
        assert_eq!(lf.attrs[1].2, kind.spec().name);
    }
}

#[test]
fn every_kind_maps_its_code_in_both_versions() {
    for &kind in FaultKind::ALL {
        let spec = kind.spec();
        let v11 = Fault::new(kind).to_envelope(SoapVersion::V11);
        let f = fault_element(&v11, NS11);
        // Codes another specification defines (WS-Security's) are the faultcode as they
        // are; lather's own map to Client/Server.
        let (_, prefix, local) = kind.subcode();
        let expected = if kind.has_foreign_subcode() {
            format!("{prefix}:{local}")
        } else {
            format!("soap:{}", spec.code.soap11_local())
        };
        assert_eq!(text_of(f.child("", "faultcode").unwrap()), expected);
        let v12 = Fault::new(kind).to_envelope(SoapVersion::V12);
        let f = fault_element(&v12, NS12);
        let code = f.child(NS12, "Code").unwrap();
        assert_eq!(
            text_of(code.child(NS12, "Value").unwrap()),
            format!("env:{}", spec.code.soap12_local())
        );
        assert_eq!(code.child(NS12, "Subcode").is_some(), spec.has_subcode);
    }
    assert_eq!(FaultCode::Sender.soap11_local(), "Client");
    assert_eq!(FaultCode::Receiver.soap11_local(), "Server");
    assert_eq!(FaultCode::DataEncodingUnknown.soap11_local(), "Client");
}

#[test]
fn http_status_per_version() {
    let status = |kind: FaultKind, version| Fault::new(kind).http_status(version);
    // SOAP 1.1: content faults (400) become 500; transport refusals keep their status.
    assert_eq!(status(FaultKind::MalformedXml, SoapVersion::V11), 500);
    assert_eq!(status(FaultKind::InvalidEnvelope, SoapVersion::V11), 500);
    assert_eq!(status(FaultKind::MessageTooLarge, SoapVersion::V11), 413);
    assert_eq!(status(FaultKind::DecodedTooLarge, SoapVersion::V11), 413);
    assert_eq!(
        status(FaultKind::UnsupportedMediaType, SoapVersion::V11),
        415
    );
    assert_eq!(status(FaultKind::ServerBusy, SoapVersion::V11), 503);
    assert_eq!(status(FaultKind::NoSuchService, SoapVersion::V11), 404);
    assert_eq!(status(FaultKind::Internal, SoapVersion::V11), 500);
    // SOAP 1.2: the catalogue status.
    assert_eq!(status(FaultKind::MalformedXml, SoapVersion::V12), 400);
    assert_eq!(status(FaultKind::InvalidEnvelope, SoapVersion::V12), 400);
    assert_eq!(status(FaultKind::MessageTooLarge, SoapVersion::V12), 413);
    assert_eq!(
        status(FaultKind::UnsupportedMediaType, SoapVersion::V12),
        415
    );
    assert_eq!(status(FaultKind::ServerBusy, SoapVersion::V12), 503);
    assert_eq!(status(FaultKind::VersionMismatch, SoapVersion::V12), 500);
    assert_eq!(status(FaultKind::MustUnderstand, SoapVersion::V12), 500);
    for &kind in FaultKind::ALL {
        let v11 = status(kind, SoapVersion::V11);
        let v12 = status(kind, SoapVersion::V12);
        assert_eq!(v12, kind.spec().http_status);
        assert!(v11 != 400, "{}", kind.spec().name);
        if v12 != 400 {
            assert_eq!(v11, v12);
        }
    }
}

#[test]
fn fault_values() {
    let fault = Fault::new(FaultKind::TooDeep);
    assert_eq!(fault.kind(), FaultKind::TooDeep);
    assert_eq!(fault.reason(), FaultKind::TooDeep.spec().reason);
    assert_eq!(Fault::from(FaultKind::TooDeep), fault);
    let shown = Fault::with_reason(FaultKind::TooDeep, "depth 65").to_string();
    assert_eq!(shown, "TooDeep (1007): depth 65");
}

// ===== WS-Addressing faults =====

const WSA10: &str = lather_envelope::WSA10_NS;
const WSA04: &str = lather_envelope::WSA04_NS;

/// The text of the `env:Value` of `code` and of each nested `env:Subcode`, outermost first.
fn code_chain(code: &Element) -> Vec<String> {
    let mut chain = vec![text_of(code.child(NS12, "Value").unwrap())];
    let mut at = code;
    while let Some(sub) = at.child(NS12, "Subcode") {
        chain.push(text_of(sub.child(NS12, "Value").unwrap()));
        at = sub;
    }
    chain
}

#[test]
fn wsa10_soap12_nests_the_second_level_code_and_names_the_problem_header() {
    let fault = Fault::with_reason(FaultKind::InvalidCardinality, "two wsa:To")
        .problem_header(QName::new(WSA10, "To"))
        .relates_to("urn:uuid:1");
    let env = reparse(&fault, SoapVersion::V12);
    let s = std::str::from_utf8(env.as_bytes()).unwrap();
    assert!(
        s.contains(&format!(
            r#"<env:Subcode><env:Value xmlns:wsa="{WSA10}">wsa:InvalidAddressingHeader</env:Value><env:Subcode><env:Value xmlns:wsa="{WSA10}">wsa:InvalidCardinality</env:Value></env:Subcode></env:Subcode>"#
        )),
        "{s}"
    );
    let f = fault_element(env.as_bytes(), NS12);
    assert_eq!(
        code_chain(f.child(NS12, "Code").unwrap()),
        [
            "env:Sender",
            "wsa:InvalidAddressingHeader",
            "wsa:InvalidCardinality"
        ]
    );
    let detail = f.child(NS12, "Detail").unwrap();
    let problem = detail.child(WSA10, "ProblemHeaderQName").unwrap();
    assert_eq!(text_of(problem), "wsa:To");
    assert!(detail.child(LATHER_FAULT_NS, "fault").is_some());
    // The addressing headers of a fault: the fault action and the relation to the request.
    let action = env.header(&QName::new(WSA10, "Action")).unwrap();
    assert_eq!(
        env.header_text(action).as_deref(),
        Some("http://www.w3.org/2005/08/addressing/fault")
    );
    let relates = env.header(&QName::new(WSA10, "RelatesTo")).unwrap();
    assert_eq!(env.header_text(relates).as_deref(), Some("urn:uuid:1"));
    assert!(env.header(&QName::new(WSA10, "FaultDetail")).is_none());
}

#[test]
fn wsa10_soap11_puts_the_subcode_in_faultcode_and_the_detail_in_a_header() {
    let fault = Fault::new(FaultKind::MessageAddressingHeaderRequired)
        .problem_header(QName::new(WSA10, "Action"));
    let env = reparse(&fault, SoapVersion::V11);
    let f = fault_element(env.as_bytes(), NS11);
    assert_eq!(
        text_of(f.child("", "faultcode").unwrap()),
        "wsa:MessageAddressingHeaderRequired"
    );
    let s = std::str::from_utf8(env.as_bytes()).unwrap();
    assert!(
        s.contains(&format!(
            r#"<faultcode xmlns:wsa="{WSA10}">wsa:MessageAddressingHeaderRequired</faultcode>"#
        )),
        "{s}"
    );
    let root = canonical(env.as_bytes()).unwrap();
    let header = root.child(NS11, "Header").unwrap();
    let problem = header
        .child(WSA10, "FaultDetail")
        .unwrap()
        .child(WSA10, "ProblemHeaderQName")
        .unwrap();
    assert_eq!(text_of(problem), "wsa:Action");
    assert!(header.child(WSA10, "Action").is_some());
    // SOAP 1.1's detail is about the Body: no problem header there.
    let detail = f.child("", "detail").unwrap();
    assert!(detail.child(WSA10, "ProblemHeaderQName").is_none());
}

#[test]
fn wsa_2004_faults_use_the_submission_namespace_and_fault_action() {
    let fault = Fault::new(FaultKind::InvalidMessageInformationHeader).relates_to("uuid:7");
    for version in [SoapVersion::V11, SoapVersion::V12] {
        let env = reparse(&fault, version);
        let action = env.header(&QName::new(WSA04, "Action")).unwrap();
        assert_eq!(
            env.header_text(action).as_deref(),
            Some("http://schemas.xmlsoap.org/ws/2004/08/addressing/fault")
        );
        let relates = env.header(&QName::new(WSA04, "RelatesTo")).unwrap();
        assert_eq!(env.header_text(relates).as_deref(), Some("uuid:7"));
    }
    let v11 = fault.to_envelope(SoapVersion::V11);
    let f = fault_element(&v11, NS11);
    assert_eq!(
        text_of(f.child("", "faultcode").unwrap()),
        "wsa:InvalidMessageInformationHeader"
    );
    let s = std::str::from_utf8(&v11).unwrap();
    assert!(s.contains(&format!(
        r#"xmlns:wsa="{WSA04}">wsa:InvalidMessageInformationHeader"#
    )));
    let v12 = fault.to_envelope(SoapVersion::V12);
    let f = fault_element(&v12, NS12);
    assert_eq!(
        code_chain(f.child(NS12, "Code").unwrap()),
        ["env:Sender", "wsa:InvalidMessageInformationHeader"]
    );
}

#[test]
fn a_problem_header_in_another_namespace_declares_its_prefix() {
    let fault = Fault::new(FaultKind::InvalidAddressingHeader)
        .problem_header(QName::new("urn:x&y", "Custom"));
    let env = reparse(&fault, SoapVersion::V12);
    let s = std::str::from_utf8(env.as_bytes()).unwrap();
    assert!(
        s.contains(&format!(
            r#"<wsa:ProblemHeaderQName xmlns:wsa="{WSA10}" xmlns:h="urn:x&amp;y">h:Custom</wsa:ProblemHeaderQName>"#
        )),
        "{s}"
    );
    // Faults that are not about addressing carry no addressing header.
    let other = reparse(
        &Fault::new(FaultKind::MalformedXml).relates_to("urn:uuid:1"),
        SoapVersion::V11,
    );
    assert!(!other.has_header_element());
}

#[test]
fn extra_detail_elements_follow_the_fault_code_in_both_versions() {
    let fault = Fault::new(FaultKind::UnsupportedCompression)
        .with_detail(r#"<x:A xmlns:x="urn:x">gzip</x:A>"#)
        .with_detail(r#"<x:B xmlns:x="urn:x"/>"#);
    assert_eq!(
        fault.extra_detail(),
        Some(r#"<x:A xmlns:x="urn:x">gzip</x:A><x:B xmlns:x="urn:x"/>"#)
    );
    for version in [SoapVersion::V11, SoapVersion::V12] {
        let text = String::from_utf8(fault.to_envelope(version).to_vec()).unwrap();
        let code = text.find(r#"code="1080""#).expect("lf:fault");
        let extra = text
            .find(r#"<x:A xmlns:x="urn:x">gzip</x:A><x:B"#)
            .expect("extra");
        assert!(code < extra, "{text}");
        let end = if version == SoapVersion::V11 {
            "</detail>"
        } else {
            "</env:Detail>"
        };
        assert!(extra < text.find(end).unwrap(), "{text}");
    }
}
