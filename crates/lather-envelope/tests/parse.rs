//! Parsing accepted envelopes in SOAP 1.1 and 1.2: version, header blocks and their
//! processing attributes, byte ranges, the Body and its operation, and the extraction of
//! header blocks and payloads as standalone elements.

use crate::support;

use lather_envelope::{Edit, Envelope, Limits, QName, SoapVersion};
use support::{
    NS11, NS12, canonical, canonical_element, canonical_fragment, document, envelope, parse,
    refusal, text,
};

const WSA: &str = "http://www.w3.org/2005/08/addressing";
const TRACE: &str = "urn:example:trace";
const STOCK: &str = "urn:example:stock";

fn names(env: &Envelope) -> Vec<String> {
    env.headers().iter().map(|h| h.name().to_string()).collect()
}

// ===== version detection =====

#[test]
fn detects_soap11() {
    let env = parse(document("soap11-request.xml"));
    assert_eq!(env.version(), SoapVersion::V11);
    assert!(!env.is_fault());
}

#[test]
fn detects_soap12() {
    let env = parse(document("soap12-request.xml"));
    assert_eq!(env.version(), SoapVersion::V12);
    assert!(!env.is_fault());
}

#[test]
fn detects_version_with_any_prefix_or_the_default_namespace() {
    for (ns, version) in [(NS11, SoapVersion::V11), (NS12, SoapVersion::V12)] {
        for prefix in ["soap", "env", "S", "SOAP-ENV", "a.b-c_d"] {
            let xml = format!(
                r#"<{prefix}:Envelope xmlns:{prefix}="{ns}"><{prefix}:Body/></{prefix}:Envelope>"#
            );
            assert_eq!(parse(xml).version(), version, "{prefix}");
        }
        let xml = format!(r#"<Envelope xmlns="{ns}"><Body/></Envelope>"#);
        assert_eq!(parse(xml).version(), version);
    }
}

#[test]
fn accepts_declaration_bom_comments_and_processing_instructions() {
    for ns in [NS11, NS12] {
        let xml = format!(
            "\u{feff}<?xml version='1.0' encoding='utf-8'?>\n<!-- before -->\n<?pi data?>\n<p:Envelope xmlns:p='{ns}'><!-- c --><p:Body><?pi x?></p:Body><!-- c --></p:Envelope>\n<!-- after -->\n"
        );
        let env = parse(xml);
        assert_eq!(env.version().namespace(), ns);
        assert_eq!(env.body_child_count(), 0);
        assert_eq!(env.operation(), None);
    }
}

// ===== header blocks =====

#[test]
fn soap11_header_blocks() {
    let bytes = document("soap11-request.xml");
    let env = parse(bytes.clone());
    assert!(env.has_header_element());
    assert_eq!(
        names(&env),
        [
            format!("{{{WSA}}}Action"),
            format!("{{{WSA}}}MessageID"),
            format!("{{{TRACE}}}Trace")
        ]
    );
    let [action, id, trace] = env.headers() else {
        panic!("three blocks")
    };
    assert!(action.must_understand());
    assert_eq!(action.role(), None);
    assert!(!id.must_understand());
    assert!(!trace.must_understand(), "mustUnderstand=\"0\"");
    assert_eq!(
        trace.role(),
        Some("http://schemas.xmlsoap.org/soap/actor/next")
    );
    assert_eq!(trace.role(), Some(SoapVersion::V11.next_role()));
    assert!(!trace.relay(), "relay does not exist in SOAP 1.1");

    assert_eq!(
        text(&bytes[action.range()]),
        r#"<wsa:Action soap:mustUnderstand="1">urn:example:stock/GetQuote</wsa:Action>"#
    );
    assert_eq!(
        text(&env.header_bytes(id)),
        "<wsa:MessageID>urn:uuid:6b29fc40-ca47-1067-b31d-00dd010662da</wsa:MessageID>"
    );
    assert_eq!(text(&bytes[trace.content_range()]), "hop &amp; skip");
    assert_eq!(
        env.header_text(action).as_deref(),
        Some("urn:example:stock/GetQuote")
    );
    assert_eq!(env.header_text(trace).as_deref(), Some("hop & skip"));

    let lookup = QName::new(TRACE, "Trace");
    assert_eq!(env.header(&lookup), Some(trace));
    assert_eq!(env.header_index(&lookup), Some(2));
    assert_eq!(env.header(&QName::new(TRACE, "Other")), None);
    assert_eq!(env.header_index(&QName::new("urn:else", "Trace")), None);
}

#[test]
fn soap12_header_blocks() {
    let bytes = document("soap12-request.xml");
    let env = parse(bytes.clone());
    assert_eq!(
        names(&env),
        [
            format!("{{{WSA}}}Action"),
            format!("{{{WSA}}}MessageID"),
            format!("{{{WSA}}}ReplyTo"),
            format!("{{{TRACE}}}Trace")
        ]
    );
    let [action, _id, reply_to, trace] = env.headers() else {
        panic!("four blocks")
    };
    assert!(action.must_understand());
    assert!(!action.relay());
    assert!(!trace.must_understand(), "mustUnderstand=\"false\"");
    assert!(trace.relay());
    assert_eq!(trace.role(), Some(SoapVersion::V12.next_role()));
    assert_eq!(
        text(&bytes[reply_to.range()]),
        "<wsa:ReplyTo><wsa:Address>http://www.w3.org/2005/08/addressing/anonymous</wsa:Address></wsa:ReplyTo>"
    );
    assert_eq!(
        env.header_text(reply_to),
        None,
        "element content is not text"
    );
    assert_eq!(env.header_text(trace).as_deref(), Some("hop & skip"));
}

fn one_block(ns: &str, attrs: &str) -> Envelope {
    let block = format!(r#"<h:B xmlns:h="urn:h" {attrs}>x</h:B>"#);
    parse(envelope(ns, Some(&block), ""))
}

#[test]
fn must_understand_values_soap11() {
    for (value, expected) in [("1", true), ("0", false), (" 1 ", true)] {
        let env = one_block(NS11, &format!(r#"p:mustUnderstand="{value}""#));
        assert_eq!(env.headers()[0].must_understand(), expected, "{value:?}");
    }
    for value in ["true", "false", "yes", "2", ""] {
        let xml = envelope(
            NS11,
            Some(&format!(
                r#"<h:B xmlns:h="urn:h" p:mustUnderstand="{value}"/>"#
            )),
            "",
        );
        assert_eq!(
            refusal(xml),
            lather_envelope::FaultKind::InvalidEnvelope,
            "{value:?}"
        );
    }
}

#[test]
fn must_understand_values_soap12() {
    for (value, expected) in [("true", true), ("1", true), ("false", false), ("0", false)] {
        let env = one_block(NS12, &format!(r#"p:mustUnderstand="{value}""#));
        assert_eq!(env.headers()[0].must_understand(), expected, "{value:?}");
    }
    for value in ["TRUE", "yes", "2", "", "True"] {
        let xml = envelope(
            NS12,
            Some(&format!(
                r#"<h:B xmlns:h="urn:h" p:mustUnderstand="{value}"/>"#
            )),
            "",
        );
        assert_eq!(
            refusal(xml),
            lather_envelope::FaultKind::InvalidEnvelope,
            "{value:?}"
        );
    }
}

#[test]
fn relay_values_soap12() {
    for (value, expected) in [("true", true), ("1", true), ("false", false), ("0", false)] {
        let env = one_block(NS12, &format!(r#"p:relay="{value}""#));
        assert_eq!(env.headers()[0].relay(), expected, "{value:?}");
    }
    let xml = envelope(NS12, Some(r#"<h:B xmlns:h="urn:h" p:relay="maybe"/>"#), "");
    assert_eq!(refusal(xml), lather_envelope::FaultKind::InvalidEnvelope);
}

#[test]
fn processing_attributes_only_count_in_the_envelope_namespace() {
    // Unqualified attributes, the other version's namespace, or the other version's
    // attribute name are not SOAP processing attributes.
    let attrs = format!(
        r#"mustUnderstand="true" role="r" relay="true" xmlns:o="{NS11}" o:mustUnderstand="1" o:actor="a" p:actor="b""#
    );
    let env = one_block(NS12, &attrs);
    let block = &env.headers()[0];
    assert!(!block.must_understand());
    assert!(!block.relay());
    assert_eq!(block.role(), None);

    let attrs = format!(r#"xmlns:o="{NS12}" o:mustUnderstand="true" p:role="r" p:relay="1""#);
    let env = one_block(NS11, &attrs);
    let block = &env.headers()[0];
    assert!(!block.must_understand());
    assert!(!block.relay());
    assert_eq!(block.role(), None);
}

#[test]
fn processing_attributes_resolve_through_any_prefix() {
    let attrs =
        format!(r#"xmlns:e="{NS12}" e:mustUnderstand="1" e:role="urn:a&amp;b" e:relay="true""#);
    let env = one_block(NS12, &attrs);
    let block = &env.headers()[0];
    assert!(block.must_understand());
    assert!(block.relay());
    assert_eq!(block.role(), Some("urn:a&b"), "role is unescaped");
}

#[test]
fn actor_and_role() {
    let env = one_block(NS11, r#"p:actor="urn:some:actor""#);
    assert_eq!(env.headers()[0].role(), Some("urn:some:actor"));
    let env = one_block(
        NS12,
        r#"p:role="http://www.w3.org/2003/05/soap-envelope/role/none""#,
    );
    assert_eq!(
        env.headers()[0].role(),
        Some("http://www.w3.org/2003/05/soap-envelope/role/none")
    );
}

#[test]
fn header_block_ranges_slice_exactly() {
    for ns in [NS11, NS12] {
        let blocks = [
            r#"<a:One xmlns:a="urn:a"/>"#,
            r#"<a:Two xmlns:a="urn:a" x='1'>text &lt;<![CDATA[<raw>]]><!-- c --><a:in/></a:Two>"#,
            r#"<Three xmlns="urn:d"  >
  <Nested><Deeper>t</Deeper></Nested>
</Three >"#,
        ];
        let xml = envelope(
            ns,
            Some(&format!(" {}\n\t{}{} ", blocks[0], blocks[1], blocks[2])),
            "",
        );
        let bytes = lather_envelope::Bytes::from(xml);
        let env = parse(bytes.clone());
        assert_eq!(env.headers().len(), 3);
        for (block, expected) in env.headers().iter().zip(blocks) {
            assert_eq!(text(&bytes[block.range()]), expected);
            assert_eq!(text(&env.header_bytes(block)), expected);
        }
        let two = &env.headers()[1];
        assert_eq!(
            text(&bytes[two.content_range()]),
            "text &lt;<![CDATA[<raw>]]><!-- c --><a:in/>"
        );
        assert_eq!(
            env.header_text(two),
            None,
            "CDATA and elements are not plain text"
        );
        let one = &env.headers()[0];
        assert!(one.content_range().is_empty());
        assert_eq!(one.content_range().start, one.range().end);
        assert_eq!(env.header_text(one).as_deref(), Some(""));
        assert_eq!(env.headers()[2].name(), &QName::new("urn:d", "Three"));
    }
}

#[test]
fn header_text_unescapes_and_trims() {
    let block = r#"<a:Id xmlns:a="urn:a">
   urn:uuid:1 &amp; &#x41;&#66; &quot;q&quot;
</a:Id>"#;
    let env = parse(envelope(NS12, Some(block), ""));
    assert_eq!(
        env.header_text(&env.headers()[0]).as_deref(),
        Some("urn:uuid:1 & AB \"q\"")
    );
}

#[test]
fn header_element_present_empty_or_absent() {
    for ns in [NS11, NS12] {
        let env = parse(envelope(ns, None, ""));
        assert!(!env.has_header_element());
        assert!(env.headers().is_empty());
        let env = parse(envelope(ns, Some(""), ""));
        assert!(env.has_header_element());
        assert!(env.headers().is_empty());
        let xml = format!(r#"<p:Envelope xmlns:p="{ns}"><p:Header/><p:Body/></p:Envelope>"#);
        let env = parse(xml);
        assert!(env.has_header_element());
        assert!(env.headers().is_empty());
    }
}

#[test]
fn header_block_names_resolve_through_envelope_header_and_own_declarations() {
    let xml = format!(
        r#"<p:Envelope xmlns:p="{NS12}" xmlns:e="urn:env"><p:Header xmlns:h="urn:hdr" xmlns:e="urn:shadowed"><e:A/><h:B/><o:C xmlns:o="urn:own"/><h:D xmlns:h="urn:redeclared"/><E xmlns="urn:default"/></p:Header><p:Body/></p:Envelope>"#
    );
    let env = parse(xml);
    let got: Vec<QName> = env.headers().iter().map(|h| h.name().clone()).collect();
    assert_eq!(
        got,
        [
            QName::new("urn:shadowed", "A"),
            QName::new("urn:hdr", "B"),
            QName::new("urn:own", "C"),
            QName::new("urn:redeclared", "D"),
            QName::new("urn:default", "E"),
        ]
    );
}

// ===== body =====

#[test]
fn body_range_and_prefixed_operation() {
    for (file, ns) in [("soap11-request.xml", NS11), ("soap12-request.xml", NS12)] {
        let bytes = document(file);
        let env = parse(bytes.clone());
        let expected = "\n    <m:GetQuote xmlns:m=\"urn:example:stock\"><m:Symbol>ACME</m:Symbol></m:GetQuote>\n  ";
        assert_eq!(text(&bytes[env.body_range()]), expected);
        assert_eq!(text(&env.body()), expected);
        assert_eq!(env.operation(), Some(&QName::new(STOCK, "GetQuote")));
        assert_eq!(env.body_child_count(), 1);
        assert_eq!(env.version().namespace(), ns);
    }
}

#[test]
fn default_namespace_operation() {
    let bytes = document("soap12-default-ns.xml");
    let env = parse(bytes.clone());
    assert_eq!(env.version(), SoapVersion::V12);
    assert_eq!(env.operation(), Some(&QName::new(STOCK, "GetQuote")));
    assert_eq!(env.body_child_count(), 2);
    assert_eq!(
        text(&env.body()),
        r#"<GetQuote xmlns="urn:example:stock"><Symbol>ACME</Symbol></GetQuote><q:Other/>"#
    );
    // The header block's unqualified `mustUnderstand` is not the SOAP attribute.
    let session = &env.headers()[0];
    assert_eq!(
        session.name(),
        &QName::new("urn:example:session", "Session")
    );
    assert!(!session.must_understand());
}

#[test]
fn operation_in_the_envelope_default_namespace() {
    // An unprefixed body child under a default-namespace Envelope is in the SOAP namespace.
    let xml = format!(r#"<Envelope xmlns="{NS11}"><Body><Thing/></Body></Envelope>"#);
    let env = parse(xml);
    assert_eq!(env.operation(), Some(&QName::new(NS11, "Thing")));
    let xml = format!(r#"<e:Envelope xmlns:e="{NS11}"><e:Body><Thing/></e:Body></e:Envelope>"#);
    let env = parse(xml);
    assert_eq!(env.operation(), Some(&QName::new("", "Thing")));
}

#[test]
fn operation_resolves_through_envelope_and_body_declarations() {
    let xml = format!(
        r#"<p:Envelope xmlns:p="{NS12}" xmlns:m="urn:outer"><p:Body xmlns:n="urn:body"><n:Op/><m:Second/></p:Body></p:Envelope>"#
    );
    let env = parse(xml);
    assert_eq!(env.operation(), Some(&QName::new("urn:body", "Op")));
    assert_eq!(env.body_child_count(), 2);
}

#[test]
fn empty_and_self_closing_bodies() {
    for ns in [NS11, NS12] {
        let env = parse(envelope(ns, None, "  \n "));
        assert_eq!(env.operation(), None);
        assert_eq!(env.body_child_count(), 0);
        assert_eq!(text(&env.body()), "  \n ");
        assert_eq!(env.extract_payload(), None);
        let xml = format!(r#"<p:Envelope xmlns:p="{ns}"><p:Body /></p:Envelope>"#);
        let env = parse(xml);
        assert!(env.body().is_empty());
        assert_eq!(env.operation(), None);
    }
}

#[test]
fn body_range_with_comments_and_cdata_inside_the_operation() {
    let body = "<!-- lead --><m:Op xmlns:m='urn:m'><![CDATA[</p:Body>]]></m:Op><!-- trail -->";
    let env = parse(envelope(NS12, None, body));
    assert_eq!(text(&env.body()), body);
    assert_eq!(env.operation(), Some(&QName::new("urn:m", "Op")));
}

#[test]
fn soap11_accepts_qualified_elements_after_the_body() {
    let bytes = document("soap11-trailer.xml");
    let env = parse(bytes.clone());
    assert_eq!(env.version(), SoapVersion::V11);
    assert_eq!(env.operation(), Some(&QName::new("urn:m", "Ping")));
    assert_eq!(text(&env.body()), r#"<m:Ping xmlns:m="urn:m"/>"#);
    assert_eq!(env.write(&[]).unwrap(), bytes);
}

#[test]
fn soap11_trailer_may_hold_text() {
    let xml = format!(
        r#"<s:Envelope xmlns:s="{NS11}"><s:Body/><x:T xmlns:x="urn:x">free text</x:T></s:Envelope>"#
    );
    parse(xml);
}

#[test]
fn fault_bodies_are_recognised() {
    let xml = format!(
        r#"<s:Envelope xmlns:s="{NS11}"><s:Body><s:Fault><faultcode>s:Server</faultcode><faultstring>x</faultstring></s:Fault></s:Body></s:Envelope>"#
    );
    assert!(parse(xml).is_fault());
    // A Fault in the other version's namespace is just an operation.
    let xml = format!(
        r#"<s:Envelope xmlns:s="{NS11}"><s:Body><f:Fault xmlns:f="{NS12}"/></s:Body></s:Envelope>"#
    );
    assert!(!parse(xml).is_fault());
}

#[test]
fn as_bytes_is_the_message() {
    let bytes = document("soap12-request.xml");
    let env = parse(bytes.clone());
    assert_eq!(env.as_bytes(), &bytes);
}

// ===== extraction =====

#[test]
fn extract_header_carries_declarations_from_envelope_and_header() {
    for (file, ns) in [("soap11-request.xml", NS11), ("soap12-request.xml", NS12)] {
        let bytes = document(file);
        let env = parse(bytes.clone());
        let trace = env.header(&QName::new(TRACE, "Trace")).unwrap();
        let extracted = env.extract_header(trace);
        let s = text(&extracted);
        // The envelope prefix (for env:role/mustUnderstand), wsa (unused, but in scope)
        // and t (declared on the Header) are all carried.
        assert!(s.contains(&format!(
            r#"xmlns:{}="{ns}""#,
            env.version().default_prefix()
        )));
        assert!(s.contains(r#"xmlns:wsa="http://www.w3.org/2005/08/addressing""#));
        assert!(s.contains(r#"xmlns:t="urn:example:trace""#));
        assert!(s.starts_with("<t:Trace xmlns:"));
        assert!(s.ends_with("hop &amp; skip</t:Trace>"));

        // It is namespace-well-formed on its own and means the same as in place.
        let alone = canonical_element(&extracted).unwrap();
        let in_place = canonical(&bytes).unwrap();
        let header = in_place.child(ns, "Header").unwrap();
        let original = header.child(TRACE, "Trace").unwrap();
        assert_eq!(&alone, original);

        // It parses inside another envelope, via add_header and on its own.
        for i in 0..env.headers().len() {
            let block = env.extract_header(&env.headers()[i]);
            let edit = Edit::add_header(block.clone()).unwrap();
            let other = parse(envelope(NS12, None, ""));
            let written = other.write(&[edit]).unwrap();
            let again = parse(written);
            assert_eq!(again.headers().len(), 1);
            assert_eq!(again.headers()[0].name(), env.headers()[i].name());
            let wrapped = envelope(NS12, Some(text(&block)), "");
            assert_eq!(parse(wrapped).headers()[0].name(), env.headers()[i].name());
        }
    }
}

#[test]
fn extract_header_lets_inner_declarations_win() {
    let xml = format!(
        r#"<p:Envelope xmlns:p="{NS12}" xmlns:a="urn:outer" xmlns="urn:default-outer"><p:Header xmlns:a="urn:inner"><a:X xmlns:b="urn:b"><b:y/><z/></a:X><a:Y xmlns:a="urn:own"/></p:Header><p:Body/></p:Envelope>"#
    );
    let env = parse(xml.clone());
    let x = env.extract_header(&env.headers()[0]);
    let s = text(&x);
    assert!(s.contains(r#"xmlns:a="urn:inner""#), "{s}");
    assert!(!s.contains("urn:outer"), "{s}");
    assert!(s.contains(r#"xmlns="urn:default-outer""#), "{s}");
    let alone = canonical_element(&x).unwrap();
    assert_eq!(alone.ns, "urn:inner");
    let whole = canonical(xml.as_bytes()).unwrap();
    let header = whole.child(NS12, "Header").unwrap();
    assert_eq!(&alone, header.elements()[0]);

    // A block declaring its own prefix keeps that declaration, not the outer one.
    let y = env.extract_header(&env.headers()[1]);
    let s = text(&y);
    assert_eq!(s.matches("xmlns:a=").count(), 1, "{s}");
    assert!(s.contains(r#"xmlns:a="urn:own""#), "{s}");
    assert_eq!(canonical_element(&y).unwrap().ns, "urn:own");
}

/// Names, attributes, text and namespaces in scope of `e` and its descendants: what a
/// reader of the tree sees (not where it was parsed from).
fn tree(e: &lather_envelope::Element) -> String {
    let mut namespaces = e.namespaces().to_vec();
    namespaces.sort();
    let mut out = format!(
        "{} {:?} {:?} {:?}[",
        e.name(),
        e.attributes(),
        namespaces,
        e.text()
    );
    for child in e.elements() {
        out.push_str(&tree(child));
    }
    out.push(']');
    out
}

#[test]
fn elements_parsed_in_place_read_as_the_extracted_ones_do() {
    let xml = format!(
        r#"<p:Envelope xmlns:p="{NS12}" xmlns:a="urn:outer" xmlns="urn:default-outer"><p:Header xmlns:a="urn:inner"><a:X xmlns:b="urn:b" a:k="v &amp; w"><b:y>1 &lt; 2<![CDATA[<raw>]]></b:y><z/></a:X><a:Y xmlns:a="urn:own"><a:in/></a:Y></p:Header><p:Body xmlns:m="urn:m"><m:Op p:role="r"><m:Arg>x</m:Arg></m:Op></p:Body></p:Envelope>"#
    );
    let env = parse(xml.clone());
    let limits = Limits::default();
    for block in env.headers() {
        let in_place = env.header_element(block, &limits).unwrap();
        let alone = lather_envelope::Element::parse(&env.extract_header(block), &limits).unwrap();
        assert_eq!(tree(&in_place), tree(&alone));
        // Ranges are offsets in the message.
        assert_eq!(in_place.range(), block.range());
    }
    let x = env.header_element(&env.headers()[0], &limits).unwrap();
    assert_eq!(x.name(), &QName::new("urn:inner", "X"));
    let y = x.child(&QName::new("urn:b", "y")).unwrap();
    assert_eq!(y.text_ref(), "1 < 2<raw>");
    assert_eq!(&xml[y.range()], "<b:y>1 &lt; 2<![CDATA[<raw>]]></b:y>");
    let z = x.child(&QName::new("urn:default-outer", "z")).unwrap();
    assert_eq!(z.text_ref(), "");
    let own = env.header_element(&env.headers()[1], &limits).unwrap();
    assert!(own.child(&QName::new("urn:own", "in")).is_some());

    let op = env.payload_element(&limits).unwrap().unwrap();
    let alone = lather_envelope::Element::parse(&env.extract_payload().unwrap(), &limits).unwrap();
    assert_eq!(tree(&op), tree(&alone));
    assert_eq!(op.attribute(&QName::new(NS12, "role")), Some("r"));
    assert_eq!(
        &xml[op.range()],
        r#"<m:Op p:role="r"><m:Arg>x</m:Arg></m:Op>"#
    );
    let empty = parse(envelope(NS11, None, ""));
    assert!(empty.payload_element(&limits).is_none());
}

#[test]
fn elements_parsed_in_place_keep_the_limits() {
    let deep = format!("{}{}", "<h:d>".repeat(12), "</h:d>".repeat(12));
    let block = format!(r#"<h:B xmlns:h="urn:h">{deep}</h:B>"#);
    let env = parse(envelope(NS11, Some(&block), ""));
    let shallow = Limits {
        max_depth: 8,
        ..Limits::default()
    };
    let refused = env.header_element(&env.headers()[0], &shallow).unwrap_err();
    assert!(
        refused.reason().contains("deeper than 8"),
        "{}",
        refused.reason()
    );
    assert!(
        env.header_element(&env.headers()[0], &Limits::default())
            .is_ok()
    );
}

#[test]
fn text_is_borrowed_when_it_is_one_piece() {
    let limits = Limits::default();
    let one = lather_envelope::Element::parse(b"<a>only</a>", &limits).unwrap();
    assert!(matches!(one.text_ref(), std::borrow::Cow::Borrowed("only")));
    let split = lather_envelope::Element::parse(b"<a>x<b/>y</a>", &limits).unwrap();
    assert_eq!(split.text_ref(), "xy");
    assert_eq!(split.text_ref(), split.text());
}

#[test]
fn extract_header_without_outer_declarations_is_a_plain_slice() {
    let block = r#"<h:B xmlns:h="urn:h" xmlns:p="urn:mine">x</h:B>"#;
    // The envelope declares only `p`, which the block redeclares.
    let env = parse(envelope(NS11, Some(block), ""));
    assert_eq!(text(&env.extract_header(&env.headers()[0])), block);
}

#[test]
fn extract_payload_carries_declarations_from_envelope_and_body() {
    for ns in [NS11, NS12] {
        let xml = format!(
            r#"<p:Envelope xmlns:p="{ns}" xmlns:m="urn:m" xmlns:x="urn:x-outer"><p:Header><m:H/></p:Header><p:Body xmlns:x="urn:x-body" xmlns:y="urn:y"><m:Op x:a="1"><y:Arg>v &amp; w</y:Arg></m:Op><m:Second/></p:Body></p:Envelope>"#
        );
        let env = parse(xml.clone());
        let payload = env.extract_payload().unwrap();
        let s = text(&payload);
        assert!(s.starts_with("<m:Op "), "{s}");
        assert!(s.contains(r#"xmlns:x="urn:x-body""#), "{s}");
        assert!(!s.contains("urn:x-outer"), "{s}");
        assert!(s.ends_with("<y:Arg>v &amp; w</y:Arg></m:Op>"), "{s}");
        let alone = canonical_element(&payload).unwrap();
        let whole = canonical(xml.as_bytes()).unwrap();
        let body = whole.child(ns, "Body").unwrap();
        assert_eq!(&alone, body.elements()[0]);
    }
}

#[test]
fn extract_payload_of_a_self_closing_operation_with_default_namespace() {
    let xml = format!(
        r#"<Envelope xmlns="{NS12}" xmlns:m="urn:m"><Body><m:Op a="1" /></Body></Envelope>"#
    );
    let env = parse(xml);
    let payload = env.extract_payload().unwrap();
    let alone = canonical_element(&payload).unwrap();
    assert_eq!((alone.ns.as_str(), alone.local.as_str()), ("urn:m", "Op"));
    assert!(text(&payload).ends_with("/>"));
}

#[test]
fn extract_body_gives_every_top_level_element_its_declarations() {
    let xml = format!(
        r#"<p:Envelope xmlns:p="{NS12}" xmlns:m="urn:m" xmlns:x="urn:x-outer"><p:Body xmlns:x="urn:x-body" xmlns="urn:default"> <m:Op x:a="1"><Arg/></m:Op>
<x:Second xmlns:x="urn:own"/><Third/></p:Body></p:Envelope>"#
    );
    let env = parse(xml.clone());
    let content = env.extract_body();
    let s = text(&content);
    assert!(s.starts_with(" <m:Op xmlns:p="), "{s}");
    assert!(s.contains("\n<x:Second xmlns:p="), "{s}");
    assert_eq!(s.matches(r#"xmlns:x="urn:x-body""#).count(), 2, "{s}");
    assert_eq!(s.matches("urn:own").count(), 1, "{s}");
    assert!(!s.contains("urn:x-outer"), "{s}");
    let alone = canonical_fragment(&content).unwrap();
    let whole = canonical(xml.as_bytes()).unwrap();
    assert_eq!(alone, whole.child(NS12, "Body").unwrap().children);
    assert_eq!(alone.len(), 5, "{alone:?}");
}

#[test]
fn extract_body_carries_an_undeclared_default_namespace_and_keeps_an_empty_body_empty() {
    let xml = format!(
        r#"<e:Envelope xmlns:e="{NS12}" xmlns="urn:d"><e:Body xmlns=""><a>1</a></e:Body></e:Envelope>"#
    );
    let env = parse(xml);
    // The Body's `xmlns=""` undeclares the Envelope's default namespace; `a` must say so.
    assert_eq!(
        text(&env.extract_body()),
        format!(r#"<a xmlns:e="{NS12}" xmlns="">1</a>"#)
    );
    let env = parse(format!(r#"<Envelope xmlns="{NS12}"><Body/></Envelope>"#));
    assert_eq!(text(&env.extract_body()), "");
}

#[test]
fn body_namespaces_innermost_wins() {
    let xml = format!(
        r#"<p:Envelope xmlns:p="{NS12}" xmlns:a="urn:a-outer" xmlns:b="urn:b"><p:Body xmlns:a="urn:a-body" xmlns="urn:default"><a:Op/></p:Body></p:Envelope>"#
    );
    let env = parse(xml);
    let mut got = env.body_namespaces();
    got.sort();
    let expected: Vec<(String, String)> = [
        ("", "urn:default"),
        ("a", "urn:a-body"),
        ("b", "urn:b"),
        ("p", NS12),
    ]
    .iter()
    .map(|(p, u)| (p.to_string(), u.to_string()))
    .collect();
    assert_eq!(got, expected);
}

#[test]
fn body_namespaces_move_content_to_a_new_envelope() {
    let xml = format!(
        r#"<s:Envelope xmlns:s="{NS11}" xmlns:m="urn:m"><s:Body xmlns:n="urn:n"><m:Op><n:Arg/></m:Op></s:Body></s:Envelope>"#
    );
    let env = parse(xml.clone());
    let moved = lather_envelope::EnvelopeBuilder::new(SoapVersion::V12)
        .body_namespaces(env.body_namespaces())
        .body(env.body())
        .build();
    let again = parse(moved.clone());
    assert_eq!(again.operation(), Some(&QName::new("urn:m", "Op")));
    let before = canonical(xml.as_bytes()).unwrap();
    let after = canonical(&moved).unwrap();
    assert_eq!(
        before.child(NS11, "Body").unwrap().children,
        after.child(NS12, "Body").unwrap().children
    );
    assert_eq!(
        canonical_fragment(&again.body()).ok(),
        None,
        "prefixes are declared outside"
    );
}

#[test]
fn body_from_moves_content_and_leaves_out_only_the_envelope_s_own_declaration() {
    // `soap` bound to the 1.1 namespace is the new 1.1 envelope's own; `m` and `n` travel.
    let xml = format!(
        r#"<soap:Envelope xmlns:soap="{NS11}" xmlns:m="urn:m"><soap:Body xmlns:n="urn:n"><m:Op><n:Arg/></m:Op></soap:Body></soap:Envelope>"#
    );
    let env = parse(xml);
    let moved = lather_envelope::EnvelopeBuilder::new(SoapVersion::V11)
        .body_from(&env)
        .build();
    let long = lather_envelope::EnvelopeBuilder::new(SoapVersion::V11)
        .body_namespaces(env.body_namespaces())
        .body(env.body())
        .build();
    assert_eq!(moved, long);
    assert_eq!(env.body_namespaces().len(), 3);
    // Into a 1.2 envelope the 1.1 `soap` declaration is not its own: it travels too.
    let to_12 = lather_envelope::EnvelopeBuilder::new(SoapVersion::V12)
        .body_from(&env)
        .build();
    let text = std::str::from_utf8(&to_12).unwrap();
    assert!(text.contains(&format!(r#"xmlns:soap="{NS11}""#)), "{text}");
    assert_eq!(
        parse(to_12.clone()).operation(),
        Some(&QName::new("urn:m", "Op"))
    );
}

#[test]
fn builder_output_parses() {
    for version in [SoapVersion::V11, SoapVersion::V12] {
        let msg = lather_envelope::EnvelopeBuilder::new(version)
            .header(lather_envelope::EnvelopeBuilder::text_element(
                WSA,
                "wsa",
                "RelatesTo",
                "urn:uuid:1 & <2>",
            ))
            .body(r#"<m:Pong xmlns:m="urn:m"/>"#.into())
            .build();
        let env = Envelope::parse(msg, &Limits::default()).unwrap();
        assert_eq!(env.version(), version);
        assert_eq!(
            env.header_text(&env.headers()[0]).as_deref(),
            Some("urn:uuid:1 & <2>")
        );
        assert_eq!(env.operation(), Some(&QName::new("urn:m", "Pong")));
    }
}

#[test]
fn only_xml_whitespace_is_trimmed() {
    // U+00A0 and U+3000 are content, not XML whitespace.
    let block = "<a:Id xmlns:a=\"urn:a\">\n\u{a0}x\u{3000}\t</a:Id>";
    let env = parse(envelope(NS12, Some(block), ""));
    assert_eq!(
        env.header_text(&env.headers()[0]).as_deref(),
        Some("\u{a0}x\u{3000}")
    );
    let block = "<a:R xmlns:a=\"urn:a\" p:role=\" \u{a0}urn:r \"/>";
    let env = parse(envelope(NS12, Some(block), ""));
    assert_eq!(env.headers()[0].role(), Some("\u{a0}urn:r"));
    for ns in [NS11, NS12] {
        let block = "<a:M xmlns:a=\"urn:a\" p:mustUnderstand=\"\u{a0}1\"/>";
        assert_eq!(
            refusal(envelope(ns, Some(block), "")),
            lather_envelope::FaultKind::InvalidEnvelope
        );
        let block = "<a:M xmlns:a=\"urn:a\" p:mustUnderstand=\"\t1\n\"/>";
        assert!(parse(envelope(ns, Some(block), "")).headers()[0].must_understand());
    }
}

#[test]
fn body_namespaces_from_single_quoted_declarations_stay_well_formed() {
    let xml = format!(
        r#"<p:Envelope xmlns:p="{NS12}" xmlns:q='urn:q"quoted"'><p:Body><q:Op/></p:Body></p:Envelope>"#
    );
    let env = parse(xml);
    assert!(
        env.body_namespaces()
            .contains(&("q".to_owned(), "urn:q&quot;quoted&quot;".to_owned()))
    );
    let moved = lather_envelope::EnvelopeBuilder::new(SoapVersion::V12)
        .body_namespaces(env.body_namespaces())
        .body(env.body())
        .build();
    let again = parse(moved);
    assert_eq!(
        again.operation(),
        Some(&QName::new("urn:q\"quoted\"", "Op"))
    );
}

#[test]
fn header_attributes_are_read_by_namespace_without_a_tree() {
    // `u` is declared on the Envelope, `h` on the Header, `v` on the block itself.
    let xml = r#"<s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope" xmlns:u="urn:u"><s:Header xmlns:h="urn:h"><x:Stamp xmlns:x="urn:x" xmlns:v="urn:v" seq="7" u:Id="a&amp;b" h:Id="h1" v:Id="v1" s:mustUnderstand="true"/></s:Header><s:Body/></s:Envelope>"#;
    let env = Envelope::parse(bytes::Bytes::from(xml), &Limits::default()).unwrap();
    let block = env.header(&QName::new("urn:x", "Stamp")).unwrap();
    let get = |ns: &str, local: &str| env.header_attribute(block, &QName::new(ns, local));
    assert_eq!(get("", "seq").as_deref(), Some("7"));
    assert_eq!(get("urn:u", "Id").as_deref(), Some("a&b"));
    assert_eq!(get("urn:h", "Id").as_deref(), Some("h1"));
    assert_eq!(get("urn:v", "Id").as_deref(), Some("v1"));
    assert_eq!(
        get("http://www.w3.org/2003/05/soap-envelope", "mustUnderstand").as_deref(),
        Some("true")
    );
    // Names that are not there: wrong namespace, an unprefixed name asked with one, and
    // a namespace declaration is not an attribute.
    assert_eq!(get("urn:other", "Id"), None);
    assert_eq!(get("urn:x", "seq"), None);
    assert_eq!(get("", "Id"), None);
    assert_eq!(get("http://www.w3.org/2000/xmlns/", "x"), None);
}
