//! Every refusal of `Envelope::parse`, each with its own `FaultKind`, in both SOAP versions.

use crate::support;

use lather_envelope::{Bytes, Envelope, FaultKind, Limits};
use support::{NS11, NS12, document, envelope, parse, refusal, refuse_with};

const BOTH: [&str; 2] = [NS11, NS12];

fn assert_refused(xml: impl Into<Bytes>, kind: FaultKind) {
    let bytes = xml.into();
    let fault = refuse_with(bytes.clone(), &Limits::default());
    assert_eq!(
        fault.kind(),
        kind,
        "{fault}\n{}",
        String::from_utf8_lossy(&bytes)
    );
    assert!(!fault.reason().is_empty());
}

// ===== DOCTYPE =====

#[test]
fn doctype_is_forbidden() {
    for ns in BOTH {
        let body = envelope(ns, None, "");
        assert_refused(
            format!("<!DOCTYPE p:Envelope>{body}"),
            FaultKind::DoctypeForbidden,
        );
        assert_refused(
            format!(
                "<?xml version='1.0'?>\n<!doctype x SYSTEM 'http://example.invalid/x.dtd'>{body}"
            ),
            FaultKind::DoctypeForbidden,
        );
        // Inside the document too (not well-formed there, but refused as what it is).
        assert_refused(
            envelope(ns, None, "<!DOCTYPE x>"),
            FaultKind::DoctypeForbidden,
        );
    }
}

#[test]
fn billion_laughs_is_refused_without_expansion() {
    let bomb = document("billion-laughs.xml");
    let started = std::time::Instant::now();
    assert_refused(bomb, FaultKind::DoctypeForbidden);
    assert!(started.elapsed() < std::time::Duration::from_secs(1));
    // The same with the SOAP 1.2 namespace and an internal subset only.
    let bomb = format!(
        r#"<!DOCTYPE e [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;">]><e:Envelope xmlns:e="{NS12}"><e:Body>&b;</e:Body></e:Envelope>"#
    );
    assert_refused(bomb, FaultKind::DoctypeForbidden);
}

// ===== document element and version =====

#[test]
fn root_that_is_not_an_envelope() {
    assert_refused("<foo/>", FaultKind::NotAnEnvelope);
    assert_refused(
        r#"<m:GetQuote xmlns:m="urn:m"><m:Symbol>X</m:Symbol></m:GetQuote>"#,
        FaultKind::NotAnEnvelope,
    );
    for ns in BOTH {
        assert_refused(
            format!(r#"<s:Body xmlns:s="{ns}"/>"#),
            FaultKind::NotAnEnvelope,
        );
        assert_refused(
            format!(r#"<s:envelope xmlns:s="{ns}"><s:Body/></s:envelope>"#),
            FaultKind::NotAnEnvelope,
        );
    }
}

#[test]
fn unknown_envelope_namespace_is_a_version_mismatch() {
    for ns in [
        "http://schemas.xmlsoap.org/soap/envelope",
        "http://www.w3.org/2001/12/soap-envelope",
        "urn:not-soap",
    ] {
        let xml = format!(r#"<s:Envelope xmlns:s="{ns}"><s:Body/></s:Envelope>"#);
        assert_refused(xml, FaultKind::VersionMismatch);
    }
    // An Envelope in no namespace at all.
    assert_refused("<Envelope><Body/></Envelope>", FaultKind::VersionMismatch);
}

#[test]
fn missing_body() {
    for ns in BOTH {
        assert_refused(
            format!(r#"<p:Envelope xmlns:p="{ns}"/>"#),
            FaultKind::MissingBody,
        );
        assert_refused(
            format!(r#"<p:Envelope xmlns:p="{ns}"></p:Envelope>"#),
            FaultKind::MissingBody,
        );
        assert_refused(
            format!(
                r#"<p:Envelope xmlns:p="{ns}"><p:Header><h:A xmlns:h="urn:h"/></p:Header></p:Envelope>"#
            ),
            FaultKind::MissingBody,
        );
    }
}

// ===== limits =====

fn nested(depth: usize) -> String {
    // Envelope (1) / Body (2) / e (3) ... : `depth` elements in all.
    let inner = depth.saturating_sub(2);
    let open = "<e>".repeat(inner);
    let close = "</e>".repeat(inner);
    envelope(NS12, None, &format!("{open}{close}"))
}

#[test]
fn nesting_deeper_than_the_limit() {
    let limits = Limits {
        max_depth: 6,
        ..Limits::default()
    };
    Envelope::parse(nested(6).into(), &limits).unwrap();
    assert_eq!(refuse_with(nested(7), &limits).kind(), FaultKind::TooDeep);
    // A self-closing element counts as a level too.
    let xml = envelope(NS11, None, "<a><b><c><d><e/></d></c></b></a>");
    assert_eq!(refuse_with(xml, &limits).kind(), FaultKind::TooDeep);
    // Header blocks are counted the same way.
    let xml = envelope(
        NS11,
        Some(r#"<h:A xmlns:h="urn:h"><b><c><d><e/></d></c></b></h:A>"#),
        "",
    );
    assert_eq!(refuse_with(xml, &limits).kind(), FaultKind::TooDeep);
    // The default limit.
    parse(nested(Limits::DEFAULT_MAX_DEPTH));
    assert_refused(nested(Limits::DEFAULT_MAX_DEPTH + 1), FaultKind::TooDeep);
    // Far deeper input is refused without trouble.
    assert_refused(nested(100_000), FaultKind::TooDeep);
}

#[test]
fn more_attributes_than_the_limit() {
    let limits = Limits {
        max_attributes: 4,
        ..Limits::default()
    };
    let attrs = |n: usize| (0..n).map(|i| format!(" a{i}='{i}'")).collect::<String>();
    for ns in BOTH {
        let ok = envelope(ns, None, &format!("<m{}/>", attrs(4)));
        Envelope::parse(ok.into(), &limits).unwrap();
        let bad = envelope(ns, None, &format!("<m{}/>", attrs(5)));
        assert_eq!(
            refuse_with(bad, &limits).kind(),
            FaultKind::TooManyAttributes
        );
        // Namespace declarations count: the Envelope has one, plus four more.
        let bad = format!(
            r#"<p:Envelope xmlns:p="{ns}" xmlns:a="urn:a" xmlns:b="urn:b" xmlns:c="urn:c" xmlns:d="urn:d"><p:Body/></p:Envelope>"#
        );
        assert_eq!(
            refuse_with(bad, &limits).kind(),
            FaultKind::TooManyAttributes
        );
    }
    let default = envelope(
        NS12,
        None,
        &format!("<m{}/>", attrs(Limits::DEFAULT_MAX_ATTRIBUTES + 1)),
    );
    assert_refused(default, FaultKind::TooManyAttributes);
}

#[test]
fn message_over_the_size_limit() {
    for ns in BOTH {
        let xml = Bytes::from(envelope(ns, None, "<m:Op xmlns:m='urn:m'/>"));
        let exact = Limits {
            max_message_bytes: xml.len(),
            ..Limits::default()
        };
        Envelope::parse(xml.clone(), &exact).unwrap();
        let smaller = Limits {
            max_message_bytes: xml.len() - 1,
            ..Limits::default()
        };
        let fault = refuse_with(xml, &smaller);
        assert_eq!(fault.kind(), FaultKind::MessageTooLarge);
    }
    // Checked before anything else: even garbage over the limit is "too large".
    let tiny = Limits {
        max_message_bytes: 4,
        ..Limits::default()
    };
    assert_eq!(
        refuse_with(&b"\xff\xfe<!DOCTYPE"[..], &tiny).kind(),
        FaultKind::MessageTooLarge
    );
}

// ===== encoding =====

#[test]
fn bytes_that_are_not_utf8() {
    for ns in BOTH {
        // Latin-1 é in the body.
        let [head, tail] = [0, 1].map(|i| {
            envelope(ns, None, "<m>caf|</m>")
                .split('|')
                .nth(i)
                .unwrap()
                .to_owned()
        });
        let bytes = [head.as_bytes(), b"\xe9", tail.as_bytes()].concat();
        assert_refused(bytes, FaultKind::NotUtf8);

        let text = format!(
            "<?xml version=\"1.0\" encoding=\"UTF-16\"?>{}",
            envelope(ns, None, "")
        );
        // UTF-16 LE and BE, each with a byte order mark.
        let le: Vec<u8> = [0xFF, 0xFE]
            .into_iter()
            .chain(text.encode_utf16().flat_map(u16::to_le_bytes))
            .collect();
        let be: Vec<u8> = [0xFE, 0xFF]
            .into_iter()
            .chain(text.encode_utf16().flat_map(u16::to_be_bytes))
            .collect();
        // UTF-16 LE and BE (WS-I Basic Profile allows it), with or without a byte order
        // mark, are transcoded: the envelope is the UTF-8 one, declared as UTF-8.
        let bare: Vec<u8> = text.encode_utf16().flat_map(u16::to_le_bytes).collect();
        let utf8 = text.replacen("UTF-16", "UTF-8", 1);
        for bytes in [le, be, bare] {
            let env = parse(bytes);
            assert_eq!(env.as_bytes(), utf8.as_bytes());
            assert_eq!(env.version().namespace(), ns);
        }
        // Broken UTF-16: an odd length, a lone surrogate.
        assert_refused(&b"\xff\xfe<\x00a"[..], FaultKind::NotUtf8);
        assert_refused(&b"\xff\xfe<\x00\x00\xd8"[..], FaultKind::NotUtf8);

        // Declaring another encoding is refused even when the bytes happen to be ASCII.
        for encoding in ["ISO-8859-1", "UTF-16", "windows-1252"] {
            let xml = format!(
                "<?xml version='1.0' encoding='{encoding}'?>{}",
                envelope(ns, None, "")
            );
            assert_refused(xml, FaultKind::NotUtf8);
        }
        for encoding in ["UTF-8", "utf-8", "utf8"] {
            parse(format!(
                "<?xml version='1.0' encoding='{encoding}'?>{}",
                envelope(ns, None, "")
            ));
        }
    }
    // Overlong encodings and lone surrogates are not UTF-8.
    for bad in [&b"\xc0\xbc"[..], b"\xed\xa0\x80", b"\xf8\x88\x80\x80\x80"] {
        let mut xml = envelope(NS12, None, "<m>").into_bytes();
        let at = xml.len() - "</p:Body></p:Envelope>".len();
        let tail = xml.split_off(at);
        xml.extend_from_slice(bad);
        xml.extend_from_slice(b"</m>");
        xml.extend_from_slice(&tail);
        assert_refused(xml, FaultKind::NotUtf8);
    }
}

#[test]
fn utf16_detected_by_declaration_only_is_refused() {
    // A body that is valid UTF-8 and declares UTF-16 must not be taken as UTF-8.
    let xml = format!(
        r#"<?xml version="1.0" encoding="utf-16"?><e:Envelope xmlns:e="{NS12}"><e:Body/></e:Envelope>"#
    );
    assert_refused(xml, FaultKind::NotUtf8);
}

// ===== well-formedness =====

#[test]
fn malformed_xml() {
    for ns in BOTH {
        let cases = [
            // Unclosed.
            format!(r#"<p:Envelope xmlns:p="{ns}"><p:Body>"#),
            format!(
                r#"<p:Envelope xmlns:p="{ns}"><p:Body><m:Op xmlns:m="urn:m"></p:Body></p:Envelope>"#
            ),
            format!(r#"<p:Envelope xmlns:p="{ns}"><p:Body/>"#),
            format!(r#"<p:Envelope xmlns:p="{ns}"><p:Body/></p:Envelope"#),
            // Mismatched.
            format!(r#"<p:Envelope xmlns:p="{ns}"><p:Body></p:body></p:Envelope>"#),
            format!(r#"<p:Envelope xmlns:p="{ns}"><p:Body><a><b></a></b></p:Body></p:Envelope>"#),
            format!(r#"<p:Envelope xmlns:p="{ns}"><p:Body/></p:Envelope></p:Envelope>"#),
            // Bad attributes.
            envelope(ns, None, "<m a=1/>"),
            envelope(ns, None, "<m a/>"),
            envelope(ns, None, "<m a='1' a='2'/>"),
            envelope(ns, None, "<m a='1'b='2'/>"),
            envelope(ns, None, "<m a='<'/>"),
            envelope(ns, None, "<m a=\"1'/>"),
            envelope(ns, None, "<m a='&bogus;'/>"),
            envelope(ns, None, "<m =''/>"),
            // Undefined or broken references.
            envelope(ns, None, "<m>&nbsp;</m>"),
            envelope(ns, None, "<m>AT&T</m>"),
            envelope(ns, None, "<m>&#0;</m>"),
            envelope(ns, None, "<m>&#xD800;</m>"),
            envelope(ns, None, "<m>&amp</m>"),
            // Other.
            envelope(ns, None, "<m><!-- never closed </m>"),
            envelope(ns, None, "<m><![CDATA[never closed</m>"),
            envelope(ns, None, "<m>\u{1}</m>"),
            envelope(ns, None, "<1m/>"),
            envelope(ns, None, "<m><?xml version='1.0'?></m>"),
            envelope(ns, None, "<!ELEMENT m ANY>"),
            format!("text{}", envelope(ns, None, "")),
            format!("{}tail", envelope(ns, None, "")),
            format!("{0}{0}", envelope(ns, None, "")),
            format!(
                "<!-- c -->\n<?xml version='1.0'?>{}",
                envelope(ns, None, "")
            ),
            // Undeclared prefixes on the names lather resolves.
            format!(r#"<x:Envelope xmlns:p="{ns}"><p:Body/></x:Envelope>"#),
            envelope(ns, None, "<m:Op/>"),
            envelope(ns, Some("<h:Block/>"), ""),
            envelope(
                ns,
                Some(r#"<h:Block xmlns:h="urn:h" q:mustUnderstand="1"/>"#),
                "",
            ),
        ];
        for xml in cases {
            assert_refused(xml, FaultKind::MalformedXml);
        }
    }
    assert_refused("", FaultKind::MalformedXml);
    assert_refused("   \n", FaultKind::MalformedXml);
    assert_refused("<!-- only a comment -->", FaultKind::MalformedXml);
}

// ===== SOAP structure =====

#[test]
fn invalid_structure() {
    for ns in BOTH {
        let cases = [
            // Text directly in the Envelope, Header or Body.
            format!(r#"<p:Envelope xmlns:p="{ns}">text<p:Body/></p:Envelope>"#),
            format!(r#"<p:Envelope xmlns:p="{ns}"><p:Body/>text</p:Envelope>"#),
            format!(r#"<p:Envelope xmlns:p="{ns}"><![CDATA[ ]]><p:Body/></p:Envelope>"#),
            format!(r#"<p:Envelope xmlns:p="{ns}"> &#32;x <p:Body/></p:Envelope>"#),
            envelope(ns, Some("text"), ""),
            envelope(ns, None, "text<m/>"),
            envelope(ns, None, "<m/>text"),
            envelope(ns, None, "<![CDATA[x]]>"),
            // Header after Body, two Bodies, two Headers, something else before the Body.
            format!(r#"<p:Envelope xmlns:p="{ns}"><p:Body/><p:Header/></p:Envelope>"#),
            format!(r#"<p:Envelope xmlns:p="{ns}"><p:Body/><p:Body/></p:Envelope>"#),
            format!(r#"<p:Envelope xmlns:p="{ns}"><p:Header/><p:Header/><p:Body/></p:Envelope>"#),
            format!(
                r#"<p:Envelope xmlns:p="{ns}"><x:Other xmlns:x="urn:x"/><p:Body/></p:Envelope>"#
            ),
            format!(r#"<p:Envelope xmlns:p="{ns}"><p:Other/><p:Body/></p:Envelope>"#),
            format!(r#"<p:Envelope xmlns:p="{ns}"><p:Header/><p:Other/><p:Body/></p:Envelope>"#),
            format!(r#"<p:Envelope xmlns:p="{ns}"><Body/></p:Envelope>"#),
            // Elements after the Body that no version allows: unqualified or in the SOAP namespace.
            format!(r#"<p:Envelope xmlns:p="{ns}"><p:Body/><Trailer/></p:Envelope>"#),
            format!(r#"<p:Envelope xmlns:p="{ns}"><p:Body/><p:Trailer/></p:Envelope>"#),
            // Unqualified header blocks.
            envelope(ns, Some("<Block/>"), ""),
            envelope(ns, Some(r#"<h:A xmlns:h="urn:h"/><Block>x</Block>"#), ""),
            format!(
                r#"<p:Envelope xmlns:p="{ns}" xmlns="urn:d"><p:Header><Block xmlns=""/></p:Header><p:Body/></p:Envelope>"#
            ),
            // Bad mustUnderstand.
            envelope(
                ns,
                Some(r#"<h:A xmlns:h="urn:h" p:mustUnderstand="maybe"/>"#),
                "",
            ),
        ];
        for xml in cases {
            assert_refused(xml, FaultKind::InvalidEnvelope);
        }
    }
}

#[test]
fn soap12_refuses_elements_after_the_body_soap11_accepts_qualified_ones() {
    let trailer = r#"<x:Trailer xmlns:x="urn:x"><x:in>t</x:in></x:Trailer>"#;
    let v12 = format!(r#"<p:Envelope xmlns:p="{NS12}"><p:Body/>{trailer}</p:Envelope>"#);
    assert_refused(v12, FaultKind::InvalidEnvelope);
    let v11 = format!(
        r#"<p:Envelope xmlns:p="{NS11}"><p:Body/>{trailer}<y:More xmlns:y="urn:y"/></p:Envelope>"#
    );
    let env = parse(v11.clone());
    assert_eq!(env.write(&[]).unwrap(), v11.as_bytes());
    // Even in SOAP 1.1 a Header must not follow the Body, trailer or not.
    let v11 = format!(r#"<p:Envelope xmlns:p="{NS11}"><p:Body/>{trailer}<p:Header/></p:Envelope>"#);
    assert_refused(v11, FaultKind::InvalidEnvelope);
}

#[test]
fn whitespace_around_soap_elements_is_fine() {
    for ns in BOTH {
        let xml = format!(
            "<p:Envelope xmlns:p=\"{ns}\">\n\t <p:Header>\r\n <h:A xmlns:h=\"urn:h\"/>\n</p:Header>\n <p:Body>\n <m/> \n</p:Body>\n</p:Envelope>"
        );
        let env = parse(xml);
        assert_eq!(env.headers().len(), 1);
    }
}

#[test]
fn refusals_report_their_catalogue_status() {
    let kind = refusal("<foo/>");
    assert_eq!(kind.spec().http_status, 400);
    let fault = refuse_with(
        envelope(NS12, None, ""),
        &Limits {
            max_message_bytes: 10,
            ..Limits::default()
        },
    );
    assert_eq!(fault.http_status(lather_envelope::SoapVersion::V11), 413);
    assert_eq!(fault.http_status(lather_envelope::SoapVersion::V12), 413);
}

// ===== many attributes =====

/// An operator who raises `max_attributes` gets a linear duplicate check: an element with
/// 50 000 distinct attributes is accepted (a quadratic check would compare ~1.25 billion
/// pairs), and a duplicate at the very end is still caught.
#[test]
fn fifty_thousand_attributes_parse_and_a_late_duplicate_is_caught() {
    let limits = Limits {
        max_attributes: 100_000,
        max_message_bytes: 16 << 20,
        ..Limits::default()
    };
    let mut attrs = String::new();
    for i in 0..50_000 {
        attrs.push_str(&format!(" a{i}=\"{i}\""));
    }
    for ns in BOTH {
        let body = format!("<x:op xmlns:x=\"urn:x\"{attrs}/>");
        let env = Envelope::parse(envelope(ns, None, &body).into(), &limits).unwrap();
        assert!(env.body().len() > 50_000 * 8);
        let duplicated = format!("<x:op xmlns:x=\"urn:x\"{attrs} a7=\"again\"/>");
        let fault = refuse_with(envelope(ns, None, &duplicated), &limits);
        assert_eq!(fault.kind(), FaultKind::MalformedXml, "{fault}");
        assert!(fault.reason().contains("duplicate attribute"), "{fault}");
        // And among the first eight too.
        let early = "<x:op xmlns:x=\"urn:x\" a=\"1\" b=\"2\" a=\"3\"/>";
        let fault = refuse_with(envelope(ns, None, early), &limits);
        assert!(fault.reason().contains("duplicate attribute"), "{fault}");
    }
}
