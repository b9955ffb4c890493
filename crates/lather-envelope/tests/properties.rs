//! Property tests: random SOAP 1.1/1.2 envelopes (prefixes, default namespaces, header
//! blocks with processing attributes, escaped text, CDATA, comments, nested content) parse,
//! write back unchanged, keep their infoset (checked with an independent canonicalizer),
//! and take random edit sequences exactly as a simple model predicts. Arbitrary and mutated
//! bytes never make `Envelope::parse` panic.

use crate::support;

use lather_envelope::{Bytes, Edit, EditError, Envelope, Limits, QName, SoapVersion};
use proptest::collection::vec;
use proptest::prelude::*;
use support::{Element, Item, canonical, canonical_element, canonical_fragment};

// ===== the generated document model =====

/// Element content.
#[derive(Debug, Clone)]
enum Content {
    /// Character data (unescaped) and how to escape it.
    Text(String, u8),
    CData(String),
    Comment(String),
    Pi(String),
    Element(Elem),
}

#[derive(Debug, Clone)]
struct Attr {
    name: String,
    value: String,
    double: bool,
    style: u8,
    spaced: bool,
}

#[derive(Debug, Clone)]
struct Elem {
    name: String,
    attrs: Vec<Attr>,
    children: Vec<Content>,
    self_close: bool,
    pad: u8,
}

/// A header block: its name's namespace style, SOAP attributes, other attributes, content.
#[derive(Debug, Clone)]
struct Block {
    /// 0: own prefix `h`; 1: own default namespace; 2: prefix `a` from the Envelope or
    /// Header; 3: prefix `c` declared on the Header.
    ns_style: u8,
    local: String,
    must_understand: Option<usize>,
    role: Option<String>,
    relay: Option<usize>,
    attrs: Vec<Attr>,
    children: Vec<Content>,
    self_close: bool,
}

#[derive(Debug, Clone)]
struct Doc {
    version: SoapVersion,
    prefix: &'static str,
    xml_decl: bool,
    env_default: bool,
    /// `None`: no Header element.
    header: Option<HeaderSpec>,
    body_redeclare_b: bool,
    body_default: bool,
    body: Vec<Content>,
    body_self_close: bool,
    trailer: Option<Vec<Content>>,
    gaps: Vec<String>,
}

#[derive(Debug, Clone)]
struct HeaderSpec {
    redeclare_a: bool,
    blocks: Vec<Block>,
    self_close: bool,
    gaps: Vec<String>,
}

/// What the generated document must parse to.
#[derive(Debug, Clone)]
struct Expected {
    blocks: Vec<ExpectedBlock>,
    body: String,
}

#[derive(Debug, Clone)]
struct ExpectedBlock {
    name: QName,
    must_understand: bool,
    role: Option<String>,
    relay: bool,
    text: String,
}

// ===== serialisation =====

fn escape_char(out: &mut String, c: char, style: u8) {
    match (c, style % 3) {
        ('&', 0) => out.push_str("&amp;"),
        ('<', 0) => out.push_str("&lt;"),
        ('>', 0) => out.push_str("&gt;"),
        ('"', 0) => out.push_str("&quot;"),
        ('\'', 0) => out.push_str("&apos;"),
        (c, 1) => out.push_str(&format!("&#{};", c as u32)),
        (c, _) => out.push_str(&format!("&#x{:X};", c as u32)),
    }
}

fn escape_text(s: &str, style: u8) -> String {
    let mut out = String::new();
    for c in s.chars() {
        match c {
            '&' | '<' | '>' => escape_char(&mut out, c, style),
            c if style >= 3 && !c.is_ascii() => escape_char(&mut out, c, style),
            c => out.push(c),
        }
    }
    out
}

fn escape_attr(s: &str, style: u8, double: bool) -> String {
    let mut out = String::new();
    for c in s.chars() {
        match c {
            '&' | '<' => escape_char(&mut out, c, style),
            '"' if double => escape_char(&mut out, c, style),
            '\'' if !double => escape_char(&mut out, c, style),
            c if style >= 3 && !c.is_ascii() => escape_char(&mut out, c, style),
            c => out.push(c),
        }
    }
    out
}

fn write_attr(out: &mut String, a: &Attr) {
    let q = if a.double { '"' } else { '\'' };
    let value = escape_attr(&a.value, a.style, a.double);
    if a.spaced {
        out.push_str(&format!("\n   {} = {q}{value}{q}", a.name));
    } else {
        out.push_str(&format!(" {}={q}{value}{q}", a.name));
    }
}

fn write_content(out: &mut String, items: &[Content]) {
    for item in items {
        match item {
            Content::Text(t, style) => out.push_str(&escape_text(t, *style)),
            Content::CData(t) => out.push_str(&format!("<![CDATA[{t}]]>")),
            Content::Comment(t) => out.push_str(&format!("<!--{t}-->")),
            Content::Pi(t) => out.push_str(&format!("<?{t}?>")),
            Content::Element(e) => write_elem(out, e),
        }
    }
}

fn write_open(out: &mut String, name: &str, attrs: &[Attr], pad: u8) {
    out.push('<');
    out.push_str(name);
    for a in attrs {
        write_attr(out, a);
    }
    match pad % 3 {
        1 => out.push(' '),
        2 => out.push('\n'),
        _ => {}
    }
}

fn write_elem(out: &mut String, e: &Elem) {
    write_open(out, &e.name, &e.attrs, e.pad);
    if e.self_close && e.children.is_empty() {
        out.push_str("/>");
        return;
    }
    out.push('>');
    write_content(out, &e.children);
    out.push_str(&format!("</{}>", e.name));
}

fn attr(name: &str, value: &str) -> Attr {
    Attr {
        name: name.into(),
        value: value.into(),
        double: true,
        style: 0,
        spaced: false,
    }
}

/// Trims XML whitespace only.
fn xml_trim(s: &str) -> &str {
    s.trim_matches([' ', '\t', '\n', '\r'])
}

impl Doc {
    fn ns(&self) -> &'static str {
        self.version.namespace()
    }

    /// The element name `local` in the envelope namespace.
    fn soap_name(&self, local: &str) -> String {
        if self.prefix.is_empty() {
            local.to_owned()
        } else {
            format!("{}:{local}", self.prefix)
        }
    }

    fn gap(&self, i: usize) -> &str {
        self.gaps.get(i).map_or("", String::as_str)
    }

    fn render(&self) -> (String, Expected) {
        let ns = self.ns();
        let mut out = String::new();
        if self.xml_decl {
            out.push_str("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
        }
        out.push_str(self.gap(0));
        let mut env_attrs = Vec::new();
        if self.prefix.is_empty() {
            env_attrs.push(attr("xmlns", ns));
        } else {
            env_attrs.push(attr(&format!("xmlns:{}", self.prefix), ns));
            if self.env_default {
                env_attrs.push(attr("xmlns", "urn:env-default"));
            }
        }
        env_attrs.push(attr("xmlns:a", "urn:a"));
        env_attrs.push(attr("xmlns:b", "urn:b"));
        write_open(&mut out, &self.soap_name("Envelope"), &env_attrs, 0);
        out.push('>');
        out.push_str(self.gap(1));

        let mut blocks = Vec::new();
        if let Some(h) = &self.header {
            let mut attrs = vec![attr("xmlns:c", "urn:c")];
            if h.redeclare_a {
                attrs.push(attr("xmlns:a", "urn:a-header"));
            }
            let name = self.soap_name("Header");
            write_open(&mut out, &name, &attrs, 0);
            if h.self_close && h.blocks.is_empty() {
                out.push_str("/>");
            } else {
                out.push('>');
                for (i, block) in h.blocks.iter().enumerate() {
                    out.push_str(h.gaps.get(i).map_or("", String::as_str));
                    let (text, expected) = self.render_block(block, h.redeclare_a);
                    out.push_str(&text);
                    blocks.push(ExpectedBlock { text, ..expected });
                }
                out.push_str(h.gaps.last().map_or("", String::as_str));
                out.push_str(&format!("</{name}>"));
            }
            out.push_str(self.gap(2));
        }

        let mut body_attrs = Vec::new();
        if self.body_redeclare_b {
            body_attrs.push(attr("xmlns:b", "urn:b-body"));
        }
        // A default namespace on an unprefixed Body would move the Body itself.
        if self.body_default && !self.prefix.is_empty() {
            body_attrs.push(attr("xmlns", "urn:body-default"));
        }
        let name = self.soap_name("Body");
        write_open(&mut out, &name, &body_attrs, 0);
        let mut body = String::new();
        if self.body_self_close && self.body.is_empty() {
            out.push_str("/>");
        } else {
            out.push('>');
            write_content(&mut body, &self.body);
            out.push_str(&body);
            out.push_str(&format!("</{name}>"));
        }
        if let Some(trailer) = &self.trailer {
            out.push_str(self.gap(3));
            out.push_str(r#"<t:Trailer xmlns:t="urn:trailer">"#);
            write_content(&mut out, trailer);
            out.push_str("</t:Trailer>");
        }
        out.push_str(self.gap(4));
        out.push_str(&format!("</{}>", self.soap_name("Envelope")));
        out.push_str(self.gap(5));
        (out, Expected { blocks, body })
    }

    fn render_block(&self, b: &Block, redeclare_a: bool) -> (String, ExpectedBlock) {
        let mut attrs = Vec::new();
        let (name, ns) = match b.ns_style % 4 {
            0 => {
                attrs.push(attr("xmlns:h", "urn:h"));
                (format!("h:{}", b.local), "urn:h")
            }
            1 => {
                attrs.push(attr("xmlns", "urn:header-default"));
                (b.local.clone(), "urn:header-default")
            }
            2 => (
                format!("a:{}", b.local),
                if redeclare_a { "urn:a-header" } else { "urn:a" },
            ),
            _ => (format!("c:{}", b.local), "urn:c"),
        };
        let soap = if self.prefix.is_empty() {
            if b.must_understand.is_some() || b.role.is_some() || b.relay.is_some() {
                attrs.push(attr("xmlns:se", self.ns()));
            }
            "se"
        } else {
            self.prefix
        };
        let booleans: &[(&str, bool)] = match self.version {
            SoapVersion::V11 => &[("1", true), ("0", false)],
            SoapVersion::V12 => &[("true", true), ("false", false), ("1", true), ("0", false)],
        };
        let mut must_understand = false;
        if let Some(i) = b.must_understand {
            let (raw, value) = booleans[i % booleans.len()];
            attrs.push(attr(&format!("{soap}:mustUnderstand"), raw));
            must_understand = value;
        }
        let mut role = None;
        if let Some(r) = &b.role {
            let name = format!("{soap}:{}", self.version.role_attribute());
            attrs.push(Attr {
                style: 1,
                double: false,
                ..attr(&name, r)
            });
            role = Some(xml_trim(r).to_owned());
        }
        let mut relay = false;
        if let (Some(i), SoapVersion::V12) = (b.relay, self.version) {
            let (raw, value) = booleans[i % booleans.len()];
            attrs.push(attr(&format!("{soap}:relay"), raw));
            relay = value;
        }
        attrs.extend(b.attrs.iter().cloned());
        let elem = Elem {
            name,
            attrs,
            children: b.children.clone(),
            self_close: b.self_close,
            pad: 0,
        };
        let mut text = String::new();
        write_elem(&mut text, &elem);
        let expected = ExpectedBlock {
            name: QName::new(ns, b.local.clone()),
            must_understand,
            role,
            relay,
            text: String::new(),
        };
        (text, expected)
    }
}

// ===== strategies =====

fn text_string() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9 &<>\"'\u{e9}\u{4e2d}\u{1F600}\u{a0}\u{3000}\n\t]{0,12}"
}

fn local_name() -> impl Strategy<Value = String> {
    "[a-zA-Z_][a-zA-Z0-9._-]{0,6}"
}

fn attrs(prefixes: &'static [&'static str]) -> impl Strategy<Value = Vec<Attr>> {
    vec(
        (
            proptest::sample::select(prefixes),
            "q[a-z0-9]{0,4}",
            text_string(),
            any::<bool>(),
            0u8..4,
            proptest::bool::weighted(0.2),
        )
            .prop_map(|(prefix, local, value, double, style, spaced)| Attr {
                name: format!("{prefix}{local}"),
                value,
                double,
                style,
                spaced,
            }),
        0..4,
    )
    .prop_map(|mut attrs| {
        let mut seen = std::collections::HashSet::new();
        attrs.retain(|a| seen.insert(a.name.clone()));
        attrs
    })
}

fn leaf() -> impl Strategy<Value = Content> {
    prop_oneof![
        4 => (text_string(), 0u8..4).prop_map(|(t, s)| Content::Text(t, s)),
        1 => "[a-z <>&\"\u{e9}]{0,8}".prop_map(Content::CData),
        1 => "[a-z <>&]{0,8}".prop_map(Content::Comment),
        1 => "pi[a-z]{0,3}( [a-z ]{0,5})?".prop_map(Content::Pi),
    ]
}

/// Element content whose element names use `prefixes` (each with its colon, or empty).
fn content(prefixes: &'static [&'static str]) -> BoxedStrategy<Vec<Content>> {
    let element = leaf().prop_recursive(4, 24, 4, move |inner| {
        (
            proptest::sample::select(prefixes),
            local_name(),
            attrs(prefixes),
            vec(inner, 0..4),
            any::<bool>(),
            0u8..3,
            0u8..6,
        )
            .prop_map(
                |(prefix, local, mut attrs, children, self_close, pad, decl)| {
                    // Now and then an element declares a namespace itself.
                    match decl {
                        0 if prefix.is_empty() => attrs.push(attr("xmlns", "urn:inner-default")),
                        1 if prefix == "a:" => attrs.push(attr("xmlns:a", "urn:a-inner")),
                        _ => {}
                    }
                    Content::Element(Elem {
                        name: format!("{prefix}{local}"),
                        attrs,
                        children,
                        self_close,
                        pad,
                    })
                },
            )
    });
    vec(element, 0..4).boxed()
}

/// Content allowed directly in the Header or Body: elements, comments, PIs, whitespace.
fn element_content(prefixes: &'static [&'static str]) -> BoxedStrategy<Vec<Content>> {
    vec(
        prop_oneof![
            4 => content(prefixes).prop_map(|items| {
                items.into_iter().find(|c| matches!(c, Content::Element(_)))
            }),
            1 => "[a-z ]{0,6}".prop_map(|c| Some(Content::Comment(c))),
            1 => whitespace().prop_map(|w| Some(Content::Text(w, 0))),
        ],
        0..4,
    )
    .prop_map(|items| {
        let mut out: Vec<Content> = items.into_iter().flatten().collect();
        // Make sure there is at least a chance of elements: wrap stray leaves.
        out.retain(|c| !matches!(c, Content::Text(t, _) if !xml_trim(t).is_empty()));
        out
    })
    .boxed()
}

fn element(prefixes: &'static [&'static str]) -> BoxedStrategy<Elem> {
    (
        proptest::sample::select(prefixes),
        local_name(),
        attrs(prefixes),
        content(prefixes),
        any::<bool>(),
    )
        .prop_map(|(prefix, local, attrs, children, self_close)| Elem {
            name: format!("{prefix}{local}"),
            attrs,
            children,
            self_close,
            pad: 0,
        })
        .boxed()
}

fn whitespace() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        Just(" ".to_owned()),
        Just("\n  ".to_owned()),
        Just("\t\n".to_owned()),
        Just("<!-- gap -->".to_owned()),
        Just("\n<?pi gap?>\n".to_owned()),
    ]
}

const CONTENT_PREFIXES: &[&str] = &["", "a:", "b:"];
const NEW_PREFIXES: &[&str] = &["n:"];

fn block() -> impl Strategy<Value = Block> {
    (
        0u8..4,
        local_name(),
        proptest::option::of(0usize..4),
        proptest::option::weighted(0.3, "[a-z:/&<>\"' ]{0,10}"),
        proptest::option::weighted(0.3, 0usize..4),
        attrs(&["", "a:", "b:"]),
        content(CONTENT_PREFIXES),
        any::<bool>(),
    )
        .prop_map(
            |(ns_style, local, must_understand, role, relay, attrs, children, self_close)| Block {
                ns_style,
                local,
                must_understand,
                role,
                relay,
                attrs,
                children,
                self_close,
            },
        )
}

fn doc() -> impl Strategy<Value = Doc> {
    let version = prop_oneof![Just(SoapVersion::V11), Just(SoapVersion::V12)];
    let prefix = proptest::sample::select(&["soap", "env", "S", "SOAP-ENV", ""][..]);
    let header = proptest::option::weighted(
        0.8,
        (
            any::<bool>(),
            vec(block(), 0..6),
            any::<bool>(),
            vec(whitespace(), 0..7),
        )
            .prop_map(|(redeclare_a, blocks, self_close, gaps)| HeaderSpec {
                redeclare_a,
                blocks,
                self_close,
                gaps,
            }),
    );
    (
        (version, prefix, any::<bool>(), any::<bool>(), header),
        (
            any::<bool>(),
            any::<bool>(),
            element_content(CONTENT_PREFIXES),
            any::<bool>(),
            proptest::option::weighted(0.2, content(CONTENT_PREFIXES)),
            vec(whitespace(), 0..6),
        ),
    )
        .prop_map(
            |(
                (version, prefix, xml_decl, env_default, header),
                (body_redeclare_b, body_default, body, body_self_close, trailer, gaps),
            )| Doc {
                version,
                prefix,
                xml_decl,
                env_default,
                header,
                body_redeclare_b,
                body_default,
                body,
                body_self_close,
                trailer: trailer.filter(|_| version == SoapVersion::V11),
                gaps,
            },
        )
}

/// A new header block, standalone: every element name uses the prefix `n` it declares.
fn new_block() -> impl Strategy<Value = String> {
    element(NEW_PREFIXES).prop_map(|mut e| {
        e.name = format!("n:{}", e.name.trim_start_matches("n:"));
        e.attrs.insert(0, attr("xmlns:n", "urn:new"));
        let mut s = String::new();
        write_elem(&mut s, &e);
        s
    })
}

/// New Body content: standalone elements (each declaring `n`), comments and whitespace.
fn new_body() -> impl Strategy<Value = String> {
    vec(
        prop_oneof![
            3 => new_block(),
            1 => whitespace(),
        ],
        0..4,
    )
    .prop_map(|parts| parts.concat())
}

#[derive(Debug, Clone)]
enum Op {
    Add(String),
    Replace(usize, String),
    Remove(usize),
    Body(String),
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    vec(
        prop_oneof![
            2 => new_block().prop_map(Op::Add),
            2 => (0usize..8, new_block()).prop_map(|(i, b)| Op::Replace(i, b)),
            2 => (0usize..8).prop_map(Op::Remove),
            1 => new_body().prop_map(Op::Body),
        ],
        0..6,
    )
}

// ===== checks =====

fn limits() -> Limits {
    Limits::default()
}

fn parse(bytes: &Bytes) -> Envelope {
    match Envelope::parse(bytes.clone(), &limits()) {
        Ok(env) => env,
        Err(f) => panic!("refused ({f}):\n{}", String::from_utf8_lossy(bytes)),
    }
}

fn soap_parts(root: &Element, ns: &str) -> (Option<Element>, Element, Vec<Element>) {
    let mut header = None;
    let mut body = None;
    let mut trailer = Vec::new();
    for e in root.elements() {
        if e.ns == ns && e.local == "Header" {
            header = Some(e.clone());
        } else if e.ns == ns && e.local == "Body" {
            body = Some(e.clone());
        } else {
            trailer.push(e.clone());
        }
    }
    (header, body.expect("Body"), trailer)
}

fn items_to_elements(items: &[Item]) -> Vec<Element> {
    items
        .iter()
        .filter_map(|i| match i {
            Item::Element(e) => Some(e.clone()),
            Item::Text(_) => None,
        })
        .collect()
}

fn check_document(xml: &str, expected: &Expected) -> Result<(), TestCaseError> {
    let bytes = Bytes::from(xml.to_owned());
    let env = parse(&bytes);
    let ns = env.version().namespace();

    // Writing without edits gives back the very bytes.
    prop_assert_eq!(env.write(&[]).unwrap(), bytes.clone());

    // The skeleton is what the generator put there.
    prop_assert_eq!(env.headers().len(), expected.blocks.len());
    for (block, want) in env.headers().iter().zip(&expected.blocks) {
        prop_assert_eq!(block.name(), &want.name);
        prop_assert_eq!(block.must_understand(), want.must_understand);
        prop_assert_eq!(block.role(), want.role.as_deref());
        prop_assert_eq!(block.relay(), want.relay);
        prop_assert_eq!(&bytes[block.range()], want.text.as_bytes());
        prop_assert_eq!(&env.header_bytes(block)[..], want.text.as_bytes());
    }
    prop_assert_eq!(&env.body()[..], expected.body.as_bytes());

    // The independent canonicalizer agrees with the skeleton.
    let root = canonical(&bytes).map_err(TestCaseError::fail)?;
    let (header, body, _) = soap_parts(&root, ns);
    let header_elements: Vec<&Element> = header.as_ref().map_or(Vec::new(), |h| h.elements());
    prop_assert_eq!(header_elements.len(), env.headers().len());
    for (block, element) in env.headers().iter().zip(&header_elements) {
        prop_assert_eq!(
            (block.name().namespace(), block.name().local()),
            (element.ns.as_str(), element.local.as_str())
        );
        // Extracted, the block stands alone and means the same.
        let extracted = env.extract_header(block);
        let alone = canonical_element(&extracted).map_err(TestCaseError::fail)?;
        prop_assert_eq!(&alone, *element);
        Edit::add_header(extracted).map_err(|f| TestCaseError::fail(f.to_string()))?;
        // header_text is the unescaped, trimmed text of a text-only block.
        let raw = &bytes[block.content_range()];
        if !raw.contains(&b'<') {
            let text: String = element
                .children
                .iter()
                .map(|c| match c {
                    Item::Text(t) => t.as_str(),
                    Item::Element(_) => "",
                })
                .collect();
            prop_assert_eq!(env.header_text(block), Some(xml_trim(&text).to_owned()));
        } else {
            prop_assert_eq!(env.header_text(block), None);
        }
    }
    let body_elements = body.elements();
    prop_assert_eq!(env.body_child_count(), body_elements.len());
    match body_elements.first() {
        None => {
            prop_assert_eq!(env.operation(), None);
            prop_assert_eq!(env.extract_payload(), None);
        }
        Some(first) => {
            prop_assert_eq!(
                env.operation(),
                Some(&QName::new(first.ns.clone(), first.local.clone()))
            );
            let payload = env.extract_payload().unwrap();
            let alone = canonical_element(&payload).map_err(TestCaseError::fail)?;
            prop_assert_eq!(&alone, *first);
        }
    }
    // The body's namespaces make its content stand alone.
    let decls: String = env
        .body_namespaces()
        .iter()
        .map(|(p, u)| {
            if p.is_empty() {
                format!(" xmlns=\"{u}\"")
            } else {
                format!(" xmlns:{p}=\"{u}\"")
            }
        })
        .collect();
    let wrapped = format!("<w{decls}>{}</w>", String::from_utf8_lossy(&env.body()));
    let rewrapped = canonical(wrapped.as_bytes()).map_err(TestCaseError::fail)?;
    prop_assert_eq!(&rewrapped.children, &body.children);
    // So does the content extracted with its declarations.
    let alone = canonical_fragment(&env.extract_body()).map_err(TestCaseError::fail)?;
    prop_assert_eq!(&alone, &body.children);
    Ok(())
}

/// Where a header block of the edited envelope comes from.
#[derive(Debug, Clone)]
enum Source {
    /// Block `i` of the original, untouched.
    Original(usize),
    /// A block an edit put there.
    New(String),
}

/// What `ops` should do to `env`: `Err` with the first error, or the header blocks and the
/// new Body content (if replaced).
fn model(env: &Envelope, ops: &[Op]) -> Result<(Vec<Source>, Option<String>), EditError> {
    let n = env.headers().len();
    let mut blocks: Vec<Option<Source>> = (0..n).map(|i| Some(Source::Original(i))).collect();
    let mut touched = vec![false; n];
    let mut added = Vec::new();
    let mut body = None;
    for op in ops {
        match op {
            Op::Add(b) => added.push(Source::New(b.clone())),
            Op::Replace(i, _) | Op::Remove(i) => {
                if *i >= n {
                    return Err(EditError::NoSuchHeader(*i));
                }
                if std::mem::replace(&mut touched[*i], true) {
                    return Err(EditError::Conflict(String::new()));
                }
                blocks[*i] = match op {
                    Op::Replace(_, b) => Some(Source::New(b.clone())),
                    _ => None,
                };
            }
            Op::Body(c) => {
                if body.is_some() {
                    return Err(EditError::Conflict(String::new()));
                }
                body = Some(c.clone());
            }
        }
    }
    let mut out: Vec<Source> = blocks.into_iter().flatten().collect();
    out.extend(added);
    Ok((out, body))
}

fn to_edit(op: &Op) -> Edit {
    let b = |s: &str| Bytes::copy_from_slice(s.as_bytes());
    match op {
        Op::Add(s) => Edit::add_header(b(s)).unwrap(),
        Op::Replace(i, s) => Edit::replace_header(*i, b(s)).unwrap(),
        Op::Remove(i) => Edit::remove_header(*i),
        Op::Body(s) => Edit::replace_body(b(s)).unwrap(),
    }
}

fn check_edits(xml: &str, ops: &[Op]) -> Result<(), TestCaseError> {
    let bytes = Bytes::from(xml.to_owned());
    let env = parse(&bytes);
    let ns = env.version().namespace();
    let edits: Vec<Edit> = ops.iter().map(to_edit).collect();
    let written = env.write(&edits);
    // Applying the edits without parsing again gives what a parse of the written bytes gives,
    // skeleton and all; the same refusals.
    let edited = env.edited(&edits, &limits());
    match (&written, &edited) {
        (Ok(out), Ok(edited)) => {
            prop_assert_eq!(format!("{edited:?}"), format!("{:?}", parse(out)));
        }
        (Err(w), Err(e)) => prop_assert_eq!(w, e),
        (w, e) => {
            return Err(TestCaseError::fail(format!(
                "write says {w:?}, edited says {e:?}"
            )));
        }
    }
    let (want_blocks, want_body) = match (model(&env, ops), written.clone()) {
        (Ok(want), Ok(_)) => want,
        (Err(EditError::NoSuchHeader(i)), Err(EditError::NoSuchHeader(j))) => {
            prop_assert_eq!(i, j);
            return Ok(());
        }
        (Err(EditError::Conflict(_)), Err(EditError::Conflict(_))) => return Ok(()),
        (want, got) => {
            return Err(TestCaseError::fail(format!(
                "model says {want:?}, write says {got:?}"
            )));
        }
    };
    let out = written.unwrap();
    let again = parse(&out);
    prop_assert_eq!(again.version(), env.version());

    // The header blocks and the Body are exactly the model's.
    let got: Vec<Bytes> = again
        .headers()
        .iter()
        .map(|h| again.header_bytes(h))
        .collect();
    let want: Vec<Bytes> = want_blocks
        .iter()
        .map(|source| match source {
            Source::Original(i) => env.header_bytes(&env.headers()[*i]),
            Source::New(text) => Bytes::from(text.clone()),
        })
        .collect();
    prop_assert_eq!(&got, &want);
    let want_body_bytes = want_body.clone().map_or(env.body(), Bytes::from);
    prop_assert_eq!(again.body(), want_body_bytes);
    if edits.is_empty() {
        prop_assert_eq!(out.clone(), bytes.clone());
    }
    prop_assert_eq!(
        again.has_header_element(),
        env.has_header_element() || !got.is_empty()
    );

    // The infoset: everything but the edited parts is unchanged.
    let before = canonical(&bytes).map_err(TestCaseError::fail)?;
    let after = canonical(&out).map_err(TestCaseError::fail)?;
    prop_assert_eq!(before.shallow(), after.shallow());
    let (h0, b0, t0) = soap_parts(&before, ns);
    let (h1, b1, t1) = soap_parts(&after, ns);
    prop_assert_eq!(t0, t1);
    prop_assert_eq!(b0.shallow(), b1.shallow());
    match want_body {
        Some(content) => {
            let fresh = canonical_fragment(content.as_bytes()).map_err(TestCaseError::fail)?;
            prop_assert_eq!(&b1.children, &fresh);
        }
        None => prop_assert_eq!(&b1.children, &b0.children),
    }
    match (&h0, &h1) {
        (Some(h0), Some(h1)) => prop_assert_eq!(h0.shallow(), h1.shallow()),
        (None, Some(h1)) => {
            prop_assert_eq!((h1.ns.as_str(), h1.local.as_str()), (ns, "Header"));
            prop_assert!(h1.attrs.is_empty());
        }
        (None, None) => prop_assert!(want_blocks.is_empty()),
        (Some(_), None) => prop_assert!(false, "the Header element disappeared"),
    }
    let originals: Vec<Element> = h0
        .as_ref()
        .map_or(Vec::new(), |h| h.elements().into_iter().cloned().collect());
    // Untouched original blocks keep their meaning; new ones mean what they meant alone.
    let mut model_elements = Vec::new();
    for source in &want_blocks {
        model_elements.push(match source {
            Source::Original(i) => originals[*i].clone(),
            Source::New(text) => canonical_element(text.as_bytes()).map_err(TestCaseError::fail)?,
        });
    }
    let header_elements = h1
        .as_ref()
        .map_or(Vec::new(), |h| items_to_elements(&h.children));
    prop_assert_eq!(header_elements, model_elements);
    if let Some(h1) = &h1 {
        prop_assert!(h1.only_whitespace_text());
    }
    Ok(())
}

/// Uses every accessor of an accepted envelope and writes it with a few edits; the output
/// must parse again.
fn exercise(env: &Envelope) {
    let _ = (env.version(), env.as_bytes(), env.has_header_element());
    for block in env.headers() {
        let _ = (
            block.name(),
            block.must_understand(),
            block.role(),
            block.relay(),
        );
        let _ = (env.header_bytes(block), env.header_text(block));
        let _ = (env.header(block.name()), env.header_index(block.name()));
        let extracted = env.extract_header(block);
        Edit::add_header(extracted).expect("an extracted header block is well-formed");
    }
    let _ = (
        env.body(),
        env.body_range(),
        env.operation(),
        env.is_fault(),
    );
    let _ = (env.body_child_count(), env.body_namespaces());
    if let Some(payload) = env.extract_payload() {
        Edit::add_header(payload).expect("an extracted payload is well-formed");
    }
    let mut edits = vec![
        Edit::add_header(Bytes::from_static(
            b"<n:Added xmlns:n=\"urn:new\">x</n:Added>",
        ))
        .unwrap(),
        Edit::replace_body(Bytes::from_static(b"<n:Body xmlns:n=\"urn:new\"/>")).unwrap(),
    ];
    if !env.headers().is_empty() {
        edits.push(Edit::remove_header(0));
    }
    let out = env.write(&edits).expect("edits apply");
    if let Err(f) = Envelope::parse(out.clone(), &Limits::default()) {
        panic!(
            "written envelope refused ({f}):\n{}\nfrom:\n{}",
            String::from_utf8_lossy(&out),
            String::from_utf8_lossy(env.as_bytes())
        );
    }
    assert_eq!(env.write(&[]).unwrap(), env.as_bytes());
}

fn small_limits() -> Limits {
    Limits {
        max_message_bytes: 8 * 1024,
        max_depth: 12,
        max_attributes: 8,
    }
}

// ===== properties =====

proptest! {
    #![proptest_config(ProptestConfig {
        // PROPTEST_CASES overrides this for longer runs.
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(384),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn generated_envelopes_parse_and_keep_their_infoset(doc in doc()) {
        let (xml, expected) = doc.render();
        check_document(&xml, &expected)?;
    }

    #[test]
    fn edit_sequences_land_where_the_model_says(doc in doc(), ops in ops()) {
        let (xml, _) = doc.render();
        check_edits(&xml, &ops)?;
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in vec(any::<u8>(), 0..512)) {
        if let Ok(env) = Envelope::parse(Bytes::from(bytes), &small_limits()) {
            exercise(&env);
        }
    }

    #[test]
    fn xml_like_text_never_panics(
        s in "(<|>|/|=|\"|'|&|;|#|x|:|!|\\?|-|\\[|\\]|CDATA|DOCTYPE|xmlns|soap|Envelope|Header|Body| |a|b|1|\u{e9})*"
    ) {
        if let Ok(env) = Envelope::parse(Bytes::from(s), &small_limits()) {
            exercise(&env);
        }
    }

    #[test]
    fn mutated_envelopes_never_panic(
        doc in doc(),
        mutations in vec((any::<prop::sample::Index>(), 0u8..5, "[<>/=\"'&;:!?a-z \u{e9}-]{0,4}"), 1..6),
    ) {
        let (xml, _) = doc.render();
        let mut bytes = xml.into_bytes();
        for (at, kind, insert) in mutations {
            if bytes.is_empty() {
                break;
            }
            let i = at.index(bytes.len());
            match kind {
                0 => { bytes.remove(i); }
                1 => { bytes.splice(i..i, insert.bytes()); }
                2 => bytes[i] ^= 1 << (i % 8),
                3 => { bytes.truncate(i); }
                _ => {
                    let end = (i + insert.len() + 1).min(bytes.len());
                    let copy = bytes[i..end].to_vec();
                    bytes.splice(i..i, copy);
                }
            }
        }
        let bytes = Bytes::from(bytes);
        let _ = Envelope::parse(bytes.clone(), &Limits::default());
        if let Ok(env) = Envelope::parse(bytes, &small_limits()) {
            exercise(&env);
        }
    }

    /// The same envelope sent as UTF-16 (either byte order, with a byte order mark) parses
    /// to exactly the UTF-8 envelope; broken UTF-16 (a byte cut off) never panics.
    #[test]
    fn generated_envelopes_parse_the_same_from_utf16(doc in doc(), big in any::<bool>()) {
        let (xml, _) = doc.render();
        let utf8 = parse(&Bytes::from(xml.clone()));
        let mut utf16: Vec<u8> = if big { vec![0xFE, 0xFF] } else { vec![0xFF, 0xFE] };
        utf16.extend(xml.encode_utf16().flat_map(|u| if big { u.to_be_bytes() } else { u.to_le_bytes() }));
        let limits = Limits { max_message_bytes: 3 * utf16.len(), ..limits() };
        let env = Envelope::parse(Bytes::from(utf16.clone()), &limits).expect("UTF-16 parses");
        prop_assert_eq!(env.as_bytes(), utf8.as_bytes());
        prop_assert_eq!(env.headers(), utf8.headers());
        utf16.pop();
        prop_assert!(Envelope::parse(Bytes::from(utf16), &limits).is_err());
    }

    #[test]
    fn generated_envelopes_survive_the_exerciser(doc in doc()) {
        let (xml, _) = doc.render();
        let env = parse(&Bytes::from(xml));
        exercise(&env);
    }
}

#[test]
fn rendering_is_well_formed_for_a_fixed_document() {
    // A sanity check of the generator itself, independent of the library.
    let doc = Doc {
        version: SoapVersion::V12,
        prefix: "",
        xml_decl: true,
        env_default: false,
        header: Some(HeaderSpec {
            redeclare_a: true,
            blocks: vec![Block {
                ns_style: 2,
                local: "T".into(),
                must_understand: Some(0),
                role: Some(" r&<'\" ".into()),
                relay: Some(1),
                attrs: vec![],
                children: vec![Content::Text("x & y".into(), 0)],
                self_close: false,
            }],
            self_close: false,
            gaps: vec![],
        }),
        body_redeclare_b: false,
        body_default: true,
        body: vec![],
        body_self_close: true,
        trailer: None,
        gaps: vec![],
    };
    let (xml, expected) = doc.render();
    canonical(xml.as_bytes()).unwrap();
    assert_eq!(expected.blocks[0].name, QName::new("urn:a-header", "T"));
    assert_eq!(expected.blocks[0].role.as_deref(), Some("r&<'\""));
    check_document(&xml, &expected).unwrap();
}
