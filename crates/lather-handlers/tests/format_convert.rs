//! `format-convert` on whole envelopes with the rules of `examples/format-convert.map`: the
//! exact bytes it writes, and the meaning of the result checked against an independent
//! renaming (Python's ElementTree, `tests/vectors/format_convert.py`) by parsing the output
//! with another parser (quick-xml).

use lather_envelope::{Envelope, EnvelopeBuilder, Limits, SOAP12_NS, SoapVersion};
use lather_handlers::FormatConvert;
use lather_pipeline::{Context, Message, Options, Outcome, Plan, Step, run};
use quick_xml::NsReader;
use quick_xml::events::Event;
use quick_xml::name::ResolveResult;
use std::sync::Arc;

fn rules() -> String {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/format-convert.map"
    );
    std::fs::read_to_string(path).unwrap()
}

/// (prefix, namespace) declared on the Body element.
type Declarations = &'static [(&'static str, &'static str)];

/// One case: its name, the declarations in scope from the Body element, the Body content.
type Case = (&'static str, Declarations, &'static str);

/// (case, declarations in scope from the Body element, Body content). Keep in step with
/// `CASES` in `tests/vectors/format_convert.py`.
const CASES: [Case; 5] = [
    (
        "prefixed",
        &[],
        r#"<q:getQuote xmlns:q="urn:example:quotes:2009" xmlns:c="urn:example:common:1" id="7"><q:sym q:cur="EUR">LATH</q:sym><c:trace c:level="2">a &amp; b</c:trace></q:getQuote>"#,
    ),
    (
        "default_namespace",
        &[],
        r#"<getQuote xmlns="urn:example:quotes:2009"><sym>LATH</sym><when>today</when></getQuote>"#,
    ),
    (
        "declared_outside",
        &[("q", "urn:example:quotes:2009")],
        r#"<q:getQuote><q:items><q:item><q:sym><![CDATA[<L&H>]]></q:sym></q:item><q:item><q:sym>GRND</q:sym></q:item></q:items></q:getQuote>"#,
    ),
    (
        "new_declarations",
        &[],
        r#"<q:getQuote xmlns:q="urn:example:quotes:2009"><legacyNote ref="r1">see <b>this</b></legacyNote></q:getQuote>"#,
    ),
    (
        "several_roots",
        &[],
        "\n  <q:getQuote xmlns:q=\"urn:example:quotes:2009\"/>\n  <!-- second -->\n  <c:ping xmlns:c=\"urn:example:common:1\" ref=\"x\"/>\n",
    ),
];

/// The canonical Body content before and after the rules, per case: the output of
/// `python3 crates/lather-handlers/tests/vectors/format_convert.py`.
const VECTORS: [(&str, &str, &str); 5] = [
    (
        "prefixed",
        r#"<{urn:example:quotes:2009}getQuote {}id="7"><{urn:example:quotes:2009}sym {urn:example:quotes:2009}cur="EUR">"LATH"</><{urn:example:common:1}trace {urn:example:common:1}level="2">"a & b"</></>"#,
        r#"<{urn:example:quotes:2024}GetQuote {}id="7"><{urn:example:quotes:2024}Symbol {}currency="EUR">"LATH"</><{urn:example:common:2}trace {urn:example:common:2}level="2">"a & b"</></>"#,
    ),
    (
        "default_namespace",
        r#"<{urn:example:quotes:2009}getQuote><{urn:example:quotes:2009}sym>"LATH"</><{urn:example:quotes:2009}when>"today"</></>"#,
        r#"<{urn:example:quotes:2024}GetQuote><{urn:example:quotes:2024}Symbol>"LATH"</><{urn:example:quotes:2024}when>"today"</></>"#,
    ),
    (
        "declared_outside",
        r#"<{urn:example:quotes:2009}getQuote><{urn:example:quotes:2009}items><{urn:example:quotes:2009}item><{urn:example:quotes:2009}sym>"<L&H>"</></><{urn:example:quotes:2009}item><{urn:example:quotes:2009}sym>"GRND"</></></></>"#,
        r#"<{urn:example:quotes:2024}GetQuote><{urn:example:quotes:2024}items><{urn:example:quotes:2024}item><{urn:example:quotes:2024}Symbol>"<L&H>"</></><{urn:example:quotes:2024}item><{urn:example:quotes:2024}Symbol>"GRND"</></></></>"#,
    ),
    (
        "new_declarations",
        r#"<{urn:example:quotes:2009}getQuote><{}legacyNote {}ref="r1">"see "<{}b>"this"</></></>"#,
        r#"<{urn:example:quotes:2024}GetQuote><{urn:example:common:2}Note {urn:example:common:2}reference="r1">"see "<{}b>"this"</></></>"#,
    ),
    (
        "several_roots",
        r#""\n  "<{urn:example:quotes:2009}getQuote></>"\n  \n  "<{urn:example:common:1}ping {}ref="x"></>"\n""#,
        r#""\n  "<{urn:example:quotes:2024}GetQuote></>"\n  \n  "<{urn:example:common:2}ping {urn:example:common:2}reference="x"></>"\n""#,
    ),
];

/// The Body content lather writes, per case: prefixes kept, declarations rewritten or
/// added where a name moved to a namespace without a prefix in scope.
const EXPECTED: [&str; 5] = [
    r#"<q:GetQuote xmlns:q="urn:example:quotes:2024" xmlns:c="urn:example:common:2" id="7"><q:Symbol currency="EUR">LATH</q:Symbol><c:trace c:level="2">a &amp; b</c:trace></q:GetQuote>"#,
    r#"<GetQuote xmlns="urn:example:quotes:2024"><Symbol>LATH</Symbol><when>today</when></GetQuote>"#,
    // The prefix was declared on the Body, which the handler does not write: declared again.
    r#"<q:GetQuote xmlns:q="urn:example:quotes:2024"><q:items><q:item><q:Symbol><![CDATA[<L&H>]]></q:Symbol></q:item><q:item><q:Symbol>GRND</q:Symbol></q:item></q:items></q:GetQuote>"#,
    // legacyNote moves into urn:example:common:2, which no prefix is bound to: a default
    // declaration; its attribute needs a prefix: ns0; the unqualified child keeps no namespace.
    r#"<q:GetQuote xmlns:q="urn:example:quotes:2024"><Note xmlns="urn:example:common:2" xmlns:ns0="urn:example:common:2" ns0:reference="r1">see <b xmlns="">this</b></Note></q:GetQuote>"#,
    "\n  <q:GetQuote xmlns:q=\"urn:example:quotes:2024\"/>\n  <!-- second -->\n  <c:ping xmlns:c=\"urn:example:common:2\" c:reference=\"x\"/>\n",
];

fn envelope(outside: &[(&str, &str)], content: &str) -> Envelope {
    let decls = outside
        .iter()
        .map(|(p, u)| ((*p).to_owned(), (*u).to_owned()))
        .collect();
    let bytes = EnvelopeBuilder::new(SoapVersion::V12)
        .body_namespaces(decls)
        .body(content.to_owned().into())
        .build();
    Envelope::parse(bytes, &Limits::default()).unwrap()
}

/// Runs the converters in turn (one stage each) over `envelope`.
async fn convert(converters: Vec<FormatConvert>, envelope: Envelope) -> Envelope {
    let stages = converters
        .into_iter()
        .enumerate()
        .map(|(i, c)| {
            vec![Arc::new(Step::new(
                format!("c{i}"),
                Arc::new(c),
                Options::default(),
            ))]
        })
        .collect();
    let message = Message::new(envelope, Context::default());
    match run(&Plan::new(stages).unwrap(), message, &Limits::default()).await {
        Outcome::Continue(message) => message.into_envelope(),
        other => panic!("{other:?}"),
    }
}

fn forward() -> FormatConvert {
    FormatConvert::from_rules(&rules(), false).unwrap()
}

fn backward() -> FormatConvert {
    FormatConvert::from_rules(&rules(), true).unwrap()
}

fn body_text(envelope: &Envelope) -> String {
    String::from_utf8(envelope.body().to_vec()).unwrap()
}

#[tokio::test]
async fn writes_the_expected_bytes() {
    for ((case, outside, content), expected) in CASES.iter().zip(EXPECTED) {
        let out = convert(vec![forward()], envelope(outside, content)).await;
        assert_eq!(body_text(&out), expected, "{case}");
    }
}

#[tokio::test]
async fn the_result_means_what_an_independent_renaming_says() {
    for ((case, outside, content), (vector_case, before, after)) in CASES.iter().zip(VECTORS) {
        assert_eq!(*case, vector_case);
        let input = envelope(outside, content);
        assert_eq!(canonical_body(input.as_bytes()), before, "{case}: input");
        let out = convert(vec![forward()], input).await;
        assert_eq!(canonical_body(out.as_bytes()), after, "{case}: output");
    }
}

#[tokio::test]
async fn the_reversed_table_brings_the_old_format_back() {
    for ((case, outside, content), (_, before, _)) in CASES.iter().zip(VECTORS) {
        let out = convert(vec![forward(), backward()], envelope(outside, content)).await;
        assert_eq!(canonical_body(out.as_bytes()), before, "{case}");
    }
    // Byte for byte where no declaration had to be added on the way.
    let (_, outside, content) = CASES[0];
    let out = convert(vec![forward(), backward()], envelope(outside, content)).await;
    assert_eq!(body_text(&out), content);
}

#[tokio::test]
async fn bodies_the_rules_do_not_touch_stay_as_they_are() {
    let input = envelope(&[], r#"<m:ping xmlns:m="urn:other" id="1">x</m:ping>"#);
    let before = input.as_bytes().clone();
    let out = convert(vec![forward()], input).await;
    assert_eq!(out.as_bytes(), &before);
}

#[tokio::test]
async fn undeclared_prefixes_are_a_malformed_body() {
    use lather_pipeline::{Handler, Verdict};
    // lather's envelope parser resolves only the Body's first child; deeper names are
    // resolved here.
    let bytes = format!(
        r#"<e:Envelope xmlns:e="{SOAP12_NS}"><e:Body><m:ok xmlns:m="urn:m"><q:getQuote/></m:ok></e:Body></e:Envelope>"#
    );
    let input = Envelope::parse(bytes.into(), &Limits::default()).unwrap();
    let message = Message::new(input, Context::default());
    match forward().call(&message).await {
        Verdict::Fault(f) => assert_eq!(f.kind(), lather_envelope::FaultKind::MalformedXml),
        other => panic!("{other:?}"),
    }
}

// ===== canonical form (as the Python script prints it) =====

fn quote(text: &str) -> String {
    let escaped = text
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n");
    format!("\"{escaped}\"")
}

fn namespace(r: &ResolveResult<'_>) -> String {
    match r {
        ResolveResult::Bound(ns) => ns.into_inner().to_owned(),
        ResolveResult::Unbound => String::new(),
        ResolveResult::Unknown(p) => panic!("unknown prefix {p:?}"),
    }
}

/// The Body content of the envelope `xml` in the canonical form: elements as
/// `<{ns}local {ns}attr="value"…>children</>` (attributes sorted), text quoted and merged,
/// comments and processing instructions dropped.
fn canonical_body(xml: &[u8]) -> String {
    let mut reader = NsReader::from_reader(xml);
    let mut out = String::new();
    let mut text = String::new();
    let mut inside = false;
    let mut depth = 0usize;
    let flush = |out: &mut String, text: &mut String| {
        if !text.is_empty() {
            out.push_str(&quote(text));
            text.clear();
        }
    };
    loop {
        let (ns, event) = reader.read_resolved_event().unwrap();
        let ns = namespace(&ns);
        match event {
            Event::Start(ref e) | Event::Empty(ref e) if inside => {
                flush(&mut out, &mut text);
                let mut attrs = Vec::new();
                for attr in e.attributes() {
                    let attr = attr.unwrap();
                    let key = attr.key.into_inner();
                    if key == "xmlns" || key.starts_with("xmlns:") {
                        continue;
                    }
                    let (ans, local) = reader.resolver().resolve_attribute(attr.key);
                    let value = attr
                        .normalized_value(quick_xml::XmlVersion::Implicit1_0)
                        .unwrap();
                    attrs.push(format!(
                        "{{{}}}{}={}",
                        namespace(&ans),
                        local.into_inner(),
                        quote(&value)
                    ));
                }
                attrs.sort();
                let local = e.local_name().into_inner().to_owned();
                out.push_str(&format!("<{{{ns}}}{local}"));
                for a in attrs {
                    out.push(' ');
                    out.push_str(&a);
                }
                out.push('>');
                if matches!(event, Event::Empty(_)) {
                    out.push_str("</>");
                } else {
                    depth += 1;
                }
            }
            Event::Start(ref e) if ns == SOAP12_NS && e.local_name().into_inner() == "Body" => {
                inside = true;
            }
            Event::End(_) if inside => {
                flush(&mut out, &mut text);
                if depth == 0 {
                    inside = false;
                } else {
                    out.push_str("</>");
                    depth -= 1;
                }
            }
            Event::Text(t) if inside => text.push_str(&t.xml10_content()),
            Event::CData(c) if inside => text.push_str(&c.xml10_content()),
            Event::GeneralRef(r) if inside => {
                let c = r.resolve_char_ref().unwrap().unwrap_or_else(|| {
                    match r.into_inner().as_ref() {
                        "amp" => '&',
                        "lt" => '<',
                        "gt" => '>',
                        "quot" => '"',
                        "apos" => '\'',
                        other => panic!("entity {other:?}"),
                    }
                });
                text.push(c);
            }
            Event::Eof => break,
            _ => {}
        }
    }
    out
}
