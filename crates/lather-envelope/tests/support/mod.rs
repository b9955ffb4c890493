//! Helpers shared by the integration tests: the sample documents, parse shorthands and an
//! independent canonicalizer (quick-xml) that reduces XML to its namespace-resolved infoset.

#![allow(dead_code)]

use lather_envelope::{Bytes, Envelope, Fault, FaultKind, Limits};
use quick_xml::NsReader;
use quick_xml::events::Event;
use quick_xml::name::ResolveResult;
use std::path::PathBuf;

/// The bytes of `tests/documents/<name>`.
pub(crate) fn document(name: &str) -> Bytes {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/documents")
        .join(name);
    Bytes::from(std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display())))
}

/// Parses `xml` with the default limits, panicking with the fault if it is refused.
pub(crate) fn parse(xml: impl Into<Bytes>) -> Envelope {
    let bytes = xml.into();
    Envelope::parse(bytes.clone(), &Limits::default()).unwrap_or_else(|f| {
        panic!("refused ({f}):\n{}", String::from_utf8_lossy(&bytes));
    })
}

/// Parses `xml` with `limits`, expecting a refusal; returns the fault.
pub(crate) fn refuse_with(xml: impl Into<Bytes>, limits: &Limits) -> Fault {
    let bytes = xml.into();
    match Envelope::parse(bytes.clone(), limits) {
        Ok(_) => panic!("accepted:\n{}", String::from_utf8_lossy(&bytes)),
        Err(f) => f,
    }
}

/// The kind of fault `xml` is refused with under the default limits.
pub(crate) fn refusal(xml: impl Into<Bytes>) -> FaultKind {
    refuse_with(xml, &Limits::default()).kind()
}

/// `bytes` as UTF-8 text.
pub(crate) fn text(bytes: &[u8]) -> &str {
    std::str::from_utf8(bytes).expect("UTF-8")
}

/// The SOAP 1.1 or 1.2 envelope namespace.
pub(crate) const NS11: &str = lather_envelope::SOAP11_NS;
/// The SOAP 1.2 envelope namespace.
pub(crate) const NS12: &str = lather_envelope::SOAP12_NS;

/// Wraps header blocks and body content in an envelope of the version with namespace `ns`,
/// using the prefix `p`.
pub(crate) fn envelope(ns: &str, headers: Option<&str>, body: &str) -> String {
    let header = headers.map_or(String::new(), |h| format!("<p:Header>{h}</p:Header>"));
    format!(r#"<p:Envelope xmlns:p="{ns}">{header}<p:Body>{body}</p:Body></p:Envelope>"#)
}

// ===== canonical infoset =====

/// A node of the namespace-resolved infoset: comments, processing instructions, the XML
/// declaration and namespace declarations are dropped; adjacent text (including CDATA and
/// references) is merged and unescaped; attributes are sorted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Item {
    /// An element.
    Element(Element),
    /// Character data.
    Text(String),
}

/// An element of the canonical infoset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Element {
    /// Namespace URI (empty for none).
    pub(crate) ns: String,
    /// Local name.
    pub(crate) local: String,
    /// `(namespace, local, value)`, sorted.
    pub(crate) attrs: Vec<(String, String, String)>,
    /// Children in order.
    pub(crate) children: Vec<Item>,
}

impl Element {
    /// The element children, skipping text.
    pub(crate) fn elements(&self) -> Vec<&Element> {
        self.children
            .iter()
            .filter_map(|c| match c {
                Item::Element(e) => Some(e),
                Item::Text(_) => None,
            })
            .collect()
    }

    /// The first child element named `{ns}local`.
    pub(crate) fn child(&self, ns: &str, local: &str) -> Option<&Element> {
        self.elements()
            .into_iter()
            .find(|e| e.ns == ns && e.local == local)
    }

    /// Whether all text children are whitespace.
    pub(crate) fn only_whitespace_text(&self) -> bool {
        self.children.iter().all(|c| match c {
            Item::Text(t) => t.trim_matches([' ', '\t', '\r', '\n']).is_empty(),
            Item::Element(_) => true,
        })
    }

    /// The element without its children (name and attributes only).
    pub(crate) fn shallow(&self) -> Element {
        Element {
            children: Vec::new(),
            ..self.clone()
        }
    }
}

fn resolved(r: &ResolveResult<'_>) -> Result<String, String> {
    match r {
        ResolveResult::Bound(ns) => Ok(ns.into_inner().to_owned()),
        ResolveResult::Unbound => Ok(String::new()),
        ResolveResult::Unknown(p) => Err(format!("unknown prefix {p:?}")),
    }
}

fn predefined(name: &str) -> Option<char> {
    Some(match name {
        "amp" => '&',
        "lt" => '<',
        "gt" => '>',
        "quot" => '"',
        "apos" => '\'',
        _ => return None,
    })
}

fn push_text(children: &mut Vec<Item>, s: &str) {
    if s.is_empty() {
        return;
    }
    if let Some(Item::Text(t)) = children.last_mut() {
        t.push_str(s);
    } else {
        children.push(Item::Text(s.to_owned()));
    }
}

/// The canonical infoset of a whole document (its root element).
pub(crate) fn canonical(xml: &[u8]) -> Result<Element, String> {
    let s = std::str::from_utf8(xml).map_err(|e| e.to_string())?;
    let mut reader = NsReader::from_str(s);
    let mut stack: Vec<Element> = Vec::new();
    let mut root: Option<Element> = None;
    loop {
        let (ns, event) = reader.read_resolved_event().map_err(|e| e.to_string())?;
        let ns = resolved(&ns);
        match event {
            Event::Start(start) | Event::Empty(start) if root.is_some() => {
                return Err(format!("second root {:?}", start.name()));
            }
            Event::Start(ref start) | Event::Empty(ref start) => {
                let ns = ns?;
                let local = start.local_name().into_inner().to_owned();
                let mut attrs = Vec::new();
                for attr in start.attributes() {
                    let attr = attr.map_err(|e| e.to_string())?;
                    let key = attr.key.into_inner();
                    if key == "xmlns" || key.starts_with("xmlns:") {
                        continue;
                    }
                    let (ans, alocal) = reader.resolver().resolve_attribute(attr.key);
                    let ans = resolved(&ans)?;
                    let value = attr
                        .normalized_value(quick_xml::XmlVersion::Implicit1_0)
                        .map_err(|e| e.to_string())?;
                    attrs.push((ans, alocal.into_inner().to_owned(), value.into_owned()));
                }
                attrs.sort();
                let element = Element {
                    ns,
                    local,
                    attrs,
                    children: Vec::new(),
                };
                if matches!(event, Event::Start(_)) {
                    stack.push(element);
                } else {
                    match stack.last_mut() {
                        Some(parent) => parent.children.push(Item::Element(element)),
                        None => root = Some(element),
                    }
                }
            }
            Event::End(_) => {
                let done = stack.pop().ok_or("unbalanced end tag")?;
                match stack.last_mut() {
                    Some(parent) => parent.children.push(Item::Element(done)),
                    None => root = Some(done),
                }
            }
            Event::Text(t) => {
                let content = t.xml10_content();
                match stack.last_mut() {
                    Some(parent) => push_text(&mut parent.children, &content),
                    None if content.trim().is_empty() => {}
                    None => return Err("text outside the root".into()),
                }
            }
            Event::GeneralRef(r) => {
                let c = match r.resolve_char_ref().map_err(|e| e.to_string())? {
                    Some(c) => c,
                    None => predefined(&r.xml10_content())
                        .ok_or_else(|| format!("undefined entity {:?}", r.into_inner()))?,
                };
                let parent = stack.last_mut().ok_or("reference outside the root")?;
                push_text(&mut parent.children, c.encode_utf8(&mut [0; 4]));
            }
            Event::CData(c) => {
                let content = c.xml10_content();
                let parent = stack.last_mut().ok_or("CDATA outside the root")?;
                push_text(&mut parent.children, &content);
            }
            Event::DocType(_) => return Err("DOCTYPE".into()),
            Event::Comment(_) | Event::Decl(_) | Event::PI(_) => {}
            Event::Eof => break,
        }
    }
    if !stack.is_empty() {
        return Err("unclosed element".into());
    }
    root.ok_or_else(|| "no root element".into())
}

/// The canonical infoset of element content (any number of elements and text), which must
/// be well-formed and namespace-well-formed on its own.
pub(crate) fn canonical_fragment(xml: &[u8]) -> Result<Vec<Item>, String> {
    let mut doc = b"<lather-test-wrapper>".to_vec();
    doc.extend_from_slice(xml);
    doc.extend_from_slice(b"</lather-test-wrapper>");
    Ok(canonical(&doc)?.children)
}

/// The canonical infoset of a single element that must stand on its own.
pub(crate) fn canonical_element(xml: &[u8]) -> Result<Element, String> {
    canonical(xml)
}
