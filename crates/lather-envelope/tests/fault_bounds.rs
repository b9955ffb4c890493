//! Every fault lather writes is bounded: a hostile request (thousands of unknown
//! mustUnderstand blocks sharing a long namespace, huge reasons, ids and details) cannot
//! make its fault large, and the bounded fault still parses and lists the first blocks.

use crate::support;

use lather_envelope::fault_bounds::{
    MAX_DETAIL_BYTES, MAX_NOT_UNDERSTOOD, MAX_NOT_UNDERSTOOD_BYTES, MAX_REASON_BYTES, MAX_URI_BYTES,
};
use lather_envelope::{
    Envelope, Fault, FaultKind, Limits, QName, SOAP12_NS, SoapVersion, WSA10_NS,
};
use proptest::collection::vec;
use proptest::prelude::*;
use support::canonical;

/// What any fault may take beyond its bounded parts: envelope, codes, subcodes, the
/// `lf:fault` element and the addressing headers' markup.
const FIXED_BYTES: usize = 2048;

/// The largest a fault may render: the fixed markup, plus each bounded part at worst six
/// times its size (every character escaped as `&apos;`).
const BOUND: usize = FIXED_BYTES
    + 6 * (MAX_REASON_BYTES + MAX_NOT_UNDERSTOOD_BYTES + 3 * MAX_URI_BYTES)
    + 24 * MAX_NOT_UNDERSTOOD
    + MAX_DETAIL_BYTES;

/// The request the amplification attack sent: ~150 KB, one 1 KB namespace declared once
/// on the Envelope and thousands of empty mandatory blocks in it.
fn hostile_request() -> (String, usize) {
    let ns = format!("urn:{}", "n".repeat(1020));
    let mut blocks = String::new();
    let mut count = 0;
    while blocks.len() < 150_000 {
        blocks.push_str(&format!(r#"<h:b{count} e:mustUnderstand="1"/>"#));
        count += 1;
    }
    let xml = format!(
        r#"<e:Envelope xmlns:e="{SOAP12_NS}" xmlns:h="{ns}"><e:Header>{blocks}</e:Header><e:Body/></e:Envelope>"#
    );
    (xml, count)
}

#[test]
fn the_fault_for_thousands_of_unknown_blocks_stays_small_and_lists_the_first() {
    let (xml, count) = hostile_request();
    assert!(count > 4000, "{count}");
    let limits = Limits {
        max_message_bytes: 1 << 20,
        ..Limits::default()
    };
    let request = Envelope::parse(xml.into(), &limits).unwrap();
    let names = request.headers().iter().map(|h| h.name());
    let fault = Fault::must_understand(names);
    assert_eq!(fault.kind(), FaultKind::MustUnderstand);
    assert_eq!(fault.not_understood_names().len(), MAX_NOT_UNDERSTOOD);
    assert_eq!(fault.not_understood_omitted(), count - MAX_NOT_UNDERSTOOD);
    assert!(fault.reason().len() <= MAX_REASON_BYTES);
    // The reason names the first blocks (namespace shortened) and counts the others.
    let reason = fault.reason();
    let named = reason.matches("…}b").count();
    assert!(reason.contains("nnn…}b0, "), "{reason}");
    assert!(
        reason.ends_with(&format!(" and {} more", count - named)),
        "{reason}"
    );
    for version in [SoapVersion::V11, SoapVersion::V12] {
        let bytes = fault.to_envelope(version);
        assert!(bytes.len() < 16 * 1024, "{version}: {} bytes", bytes.len());
        let env = Envelope::parse(bytes.clone(), &Limits::default()).unwrap();
        assert!(env.is_fault());
        if version == SoapVersion::V12 {
            // The NotUnderstood blocks name the first blocks, in order, in their namespace.
            let root = canonical(&bytes).unwrap();
            let header = root.child(SOAP12_NS, "Header").unwrap();
            let qnames: Vec<&str> = header
                .elements()
                .iter()
                .map(|e| e.attrs[0].2.as_str())
                .collect();
            let expected: Vec<String> = (0..MAX_NOT_UNDERSTOOD)
                .map(|i| format!("q0:b{i}"))
                .collect();
            assert_eq!(qnames, expected);
            let text = std::str::from_utf8(&bytes).unwrap();
            assert_eq!(text.matches("xmlns:q0=").count(), 1, "{text}");
        }
    }
}

#[test]
fn distinct_namespaces_are_declared_once_each_on_the_header() {
    let names = [
        QName::new("urn:a", "One"),
        QName::new("urn:b", "Two"),
        QName::new("urn:a", "Three"),
    ];
    let fault = Fault::new(FaultKind::MustUnderstand).not_understood(names.to_vec());
    let bytes = fault.to_envelope(SoapVersion::V12);
    let text = std::str::from_utf8(&bytes).unwrap();
    assert!(
        text.contains(
            r#"<env:Header xmlns:q0="urn:a" xmlns:q1="urn:b"><env:NotUnderstood qname="q0:One"/><env:NotUnderstood qname="q1:Two"/><env:NotUnderstood qname="q0:Three"/></env:Header>"#
        ),
        "{text}"
    );
}

#[test]
fn long_reasons_ids_and_details_are_bounded() {
    let huge = "x".repeat(1 << 20);
    let fault = Fault::with_reason(FaultKind::InvalidAddressingHeader, huge.clone())
        .relates_to(huge.clone())
        .problem_header(QName::new(huge.clone(), "H"))
        .with_detail(format!("<d>{huge}</d>"));
    assert!(fault.reason().len() <= MAX_REASON_BYTES);
    for version in [SoapVersion::V11, SoapVersion::V12] {
        let bytes = fault.to_envelope(version);
        assert!(bytes.len() < 16 * 1024, "{}", bytes.len());
        Envelope::parse(bytes, &Limits::default()).unwrap();
    }
    // A short id and problem header are still written.
    let fault = Fault::new(FaultKind::InvalidAddressingHeader)
        .relates_to("urn:uuid:1")
        .problem_header(QName::new(WSA10_NS, "To"));
    let text = String::from_utf8(fault.to_envelope(SoapVersion::V12).to_vec()).unwrap();
    assert!(text.contains(">urn:uuid:1</wsa:RelatesTo>"), "{text}");
    assert!(text.contains(">wsa:To</wsa:ProblemHeaderQName>"), "{text}");
}

fn any_text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z&<>'\" ]{0,40}",
        (0usize..4, "[a-z&'\"]{1,3}").prop_map(|(e, s)| s.repeat(1 << (6 + 3 * e))),
    ]
}

fn any_kind() -> impl Strategy<Value = FaultKind> {
    (0..FaultKind::ALL.len()).prop_map(|i| FaultKind::ALL[i])
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// For any fault, whatever its parts, the rendered size is at most the fixed markup plus
    /// the bounded parts, and the envelope parses back as a fault.
    #[test]
    fn any_fault_renders_within_the_bound(
        kind in any_kind(),
        reason in any_text(),
        names in vec((any_text(), "[a-z][a-z0-9]{0,30}"), 0..200),
        relates in proptest::option::of(any_text()),
        problem in proptest::option::of(any_text()),
        action in proptest::option::of(any_text()),
        details in vec(any_text(), 0..4),
    ) {
        let mut fault = Fault::with_reason(kind, reason)
            .not_understood(names.into_iter().map(|(ns, l)| QName::new(format!("urn:{ns}"), l)).collect());
        if let Some(id) = relates {
            fault = fault.relates_to(id);
        }
        if let Some(ns) = problem {
            fault = fault.problem_header(QName::new(format!("urn:{ns}"), "P"));
        }
        if let Some(action) = action {
            fault = fault.addressed(WSA10_NS, action);
        }
        for d in details {
            fault = fault.with_detail(format!("<d>{}</d>", lather_envelope::escape::escape_text(&d)));
        }
        for version in [SoapVersion::V11, SoapVersion::V12] {
            let bytes = fault.to_envelope(version);
            prop_assert!(bytes.len() <= BOUND, "{} > {BOUND}", bytes.len());
            let env = Envelope::parse(bytes, &Limits::default());
            prop_assert!(env.is_ok_and(|e| e.is_fault()));
        }
    }
}
