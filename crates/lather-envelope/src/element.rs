//! A small read-only element tree for fragments such as header blocks: names resolved to
//! namespaces, attributes and text unescaped. For the Body, stay with the lazy envelope.

use crate::escape::{escape_attribute, unescape};
use crate::namespace::{
    NsDecl, XML_NS, push_decls, resolve_element, resolve_prefix, split_name, uri_of,
};
use crate::scan::{Attribute, Event, Mode, Scanner, StartTag, check_characters};
use crate::source::Source;
use crate::{Fault, FaultKind, Limits, QName};
use bytes::{Bytes, BytesMut};
use std::borrow::Cow;
use std::ops::Range;
use std::sync::Arc;

/// An element with its attributes and children, where it stands in the bytes it was parsed
/// from, and the namespace declarations in scope on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Element {
    name: QName,
    attributes: Vec<(QName, String)>,
    children: Vec<Node>,
    range: Range<usize>,
    name_end: usize,
    /// `(prefix, URI)` in scope, one per prefix; shared with the parent unless this element
    /// declares namespaces itself.
    scope: Arc<[(String, String)]>,
    /// Prefixes declared on this element itself.
    declared: Vec<String>,
}

/// A child of an element.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Node {
    /// A child element.
    Element(Element),
    /// Character data (unescaped; CDATA included as text).
    Text(String),
}

impl Element {
    /// Parses one well-formed element whose namespace declarations are all on itself or
    /// inside it — e.g. what [`Envelope::extract_header`](crate::Envelope::extract_header)
    /// returns. The same checks as for envelopes apply (no DOCTYPE, `limits`).
    pub fn parse(bytes: &[u8], limits: &Limits) -> Result<Element, Fault> {
        let source = Source::checked(check_characters(bytes).map_err(fault)?);
        let scanner = Scanner::new(bytes, Mode::Fragment, *limits);
        build(source, scanner, Vec::new(), Arc::from(Vec::new()))
    }

    /// Parses the element at `range` of `message` where it stands, with the declarations of
    /// `outer` (in `message`, outermost first) in scope: nothing is copied, and the
    /// characters are not checked again — `message` is an envelope that was parsed. Its
    /// ranges are offsets in `message`.
    pub(crate) fn parse_within(
        message: &[u8],
        range: Range<usize>,
        outer: Vec<NsDecl>,
        limits: &Limits,
    ) -> Result<Element, Fault> {
        let upto = &message[..range.end];
        let source = Source::raw(upto);
        let scanner = Scanner::new(upto, Mode::Fragment, *limits).starting_at(range.start);
        let (inherited, _) = element_scope(source, &[], &outer).map_err(fault)?;
        build(source, scanner, outer, inherited)
    }
}

/// A scanner's error as a fault.
fn fault(e: crate::scan::ScanError) -> Fault {
    Fault::with_reason(e.kind, e.message)
}

/// The tree of the one element `scanner` reads from `source`, with the declarations of
/// `scope` (resolved: `inherited`) in scope around it.
fn build(
    source: Source<'_>,
    mut scanner: Scanner<'_>,
    mut scope: Vec<NsDecl>,
    inherited: Arc<[(String, String)]>,
) -> Result<Element, Fault> {
    let bytes = source.bytes();
    let mut frames: Vec<usize> = Vec::new();
    let mut stack: Vec<Element> = Vec::new();
    let mut root = None;
    loop {
        match scanner.next().map_err(fault)? {
            Event::Eof => break,
            Event::Start {
                tag:
                    StartTag {
                        start,
                        name,
                        attrs,
                        end,
                    },
                empty,
            } => {
                if root.is_some() || (stack.is_empty() && scanner.top_level_elements() > 1) {
                    return Err(Fault::with_reason(
                        FaultKind::MalformedXml,
                        "more than one element",
                    ));
                }
                frames.push(scope.len());
                push_decls(bytes, scanner.tag_attributes(), &mut scope);
                let own = &scope[frames.last().copied().unwrap_or(0)..];
                let inherited = stack.last().map_or(&inherited, |p| &p.scope);
                let (in_scope, declared) = if own.is_empty() {
                    (inherited.clone(), Vec::new())
                } else {
                    element_scope(source, inherited, own).map_err(fault)?
                };
                let element = Element {
                    name: resolve_element(source, &scope, name).map_err(fault)?,
                    attributes: element_attributes(source, &scope, scanner.tag_attributes())
                        .map_err(fault)?,
                    children: Vec::new(),
                    range: start..end,
                    name_end: attrs.start,
                    scope: in_scope,
                    declared,
                };
                if empty {
                    scope.truncate(frames.pop().unwrap_or(0));
                    close(&mut stack, &mut root, element);
                } else {
                    stack.push(element);
                }
            }
            Event::End { end, .. } => {
                scope.truncate(frames.pop().unwrap_or(0));
                if let Some(mut element) = stack.pop() {
                    element.range.end = end;
                    close(&mut stack, &mut root, element);
                }
            }
            Event::Text { range, cdata } => {
                let raw = source.text(range).unwrap_or_default();
                let text = if cdata {
                    raw.to_owned()
                } else {
                    unescape(raw).unwrap_or_default().into_owned()
                };
                match stack.last_mut() {
                    Some(parent) => parent.children.push(Node::Text(text)),
                    None if text.trim_matches([' ', '\t', '\r', '\n']).is_empty() => {}
                    None => {
                        return Err(Fault::with_reason(
                            FaultKind::MalformedXml,
                            "text outside the element",
                        ));
                    }
                }
            }
        }
    }
    root.ok_or_else(|| Fault::with_reason(FaultKind::MalformedXml, "no element"))
}

impl Element {
    /// The element's name.
    pub fn name(&self) -> &QName {
        &self.name
    }

    /// The value of the attribute named `name` (unescaped).
    pub fn attribute(&self, name: &QName) -> Option<&str> {
        self.attributes
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The attributes (namespace declarations excluded).
    pub fn attributes(&self) -> &[(QName, String)] {
        &self.attributes
    }

    /// The children in document order.
    pub fn children(&self) -> &[Node] {
        &self.children
    }

    /// The child elements.
    pub fn elements(&self) -> impl Iterator<Item = &Element> {
        self.children.iter().filter_map(|n| match n {
            Node::Element(e) => Some(e),
            Node::Text(_) => None,
        })
    }

    /// The first child element named `name`.
    pub fn child(&self, name: &QName) -> Option<&Element> {
        self.elements().find(|e| &e.name == name)
    }

    /// The concatenated text of the direct children (not of grandchildren).
    pub fn text(&self) -> String {
        self.children
            .iter()
            .filter_map(|n| match n {
                Node::Text(t) => Some(t.as_str()),
                Node::Element(_) => None,
            })
            .collect()
    }

    /// [`Element::text`] borrowed when the element holds one piece of text (a long value,
    /// such as base64, usually is), so it is not copied again.
    pub fn text_ref(&self) -> Cow<'_, str> {
        let mut texts = self.children.iter().filter_map(|n| match n {
            Node::Text(t) => Some(t.as_str()),
            Node::Element(_) => None,
        });
        match (texts.next(), texts.next()) {
            (None, _) => Cow::Borrowed(""),
            (Some(only), None) => Cow::Borrowed(only),
            _ => Cow::Owned(self.text()),
        }
    }

    /// Byte range of the whole element (start tag to end tag) in the bytes it was parsed
    /// from.
    pub fn range(&self) -> Range<usize> {
        self.range.clone()
    }

    /// The namespace declarations in scope on this element, as `(prefix, URI)` with the URI
    /// unescaped and an empty prefix for the default namespace; one per prefix, the innermost
    /// declaration winning.
    pub fn namespaces(&self) -> &[(String, String)] {
        &self.scope
    }

    /// A QName-valued text such as `tns:Temperature` (an `xs:QName` in element content or
    /// an attribute value) resolved against the namespaces in scope on this element; an
    /// unprefixed name takes the default namespace. `None` if the text is not a QName or
    /// its prefix is not declared.
    pub fn resolve_qname(&self, text: &str) -> Option<QName> {
        let text = text.trim_matches([' ', '\t', '\r', '\n']);
        let (prefix, local) = text.split_once(':').unwrap_or(("", text));
        let is_name = |s: &str| {
            !s.is_empty()
                && !s.starts_with(|c: char| c.is_ascii_digit() || matches!(c, '-' | '.'))
                && !s.contains(|c: char| {
                    c.is_whitespace() || matches!(c, ':' | '<' | '>' | '&' | '"' | '\'' | '/' | '=')
                })
        };
        if !is_name(local) || (!prefix.is_empty() && !is_name(prefix)) {
            return None;
        }
        let namespace = if prefix == "xml" {
            XML_NS
        } else {
            match self.scope.iter().find(|(p, _)| p == prefix) {
                Some((_, uri)) => uri.as_str(),
                None if prefix.is_empty() => "",
                None => return None,
            }
        };
        Some(QName::new(namespace, local))
    }

    /// This element on its own: its bytes from `source` — the bytes it was parsed from —
    /// with the namespace declarations in scope that it does not make itself added to its
    /// start tag, so it is well-formed wherever it is moved. `None` if `source` is too short
    /// to be those bytes.
    pub fn standalone(&self, source: &[u8]) -> Option<Bytes> {
        self.standalone_with(source, |_| true)
    }

    /// [`Element::standalone`], adding only the declarations the element can need: a
    /// prefix that occurs as `prefix:` in its bytes (in a name, an attribute value or text,
    /// where a QName may hold it), and the default namespace when an unprefixed element
    /// inside is in it. Declarations in scope from around it that nothing inside uses —
    /// the Envelope's, say — stay behind.
    pub fn standalone_minimal(&self, source: &[u8]) -> Option<Bytes> {
        let whole = source.get(self.range.clone())?;
        let default_used = |uri: &str| self.uses_default(uri);
        self.standalone_with(source, |(prefix, uri)| {
            if prefix.is_empty() {
                default_used(uri)
            } else {
                let needle = format!("{prefix}:");
                memchr::memmem::find_iter(whole, needle.as_bytes()).any(|at| {
                    // At the start of a name: `xmlns:` does not use the prefix `s`.
                    at == 0
                        || !matches!(whole[at - 1], b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'_' | b'.' | b'-' | 0x80..)
                })
            }
        })
    }

    /// Whether an element in this subtree is in `uri` without a prefix (approximated: in
    /// `uri` at all, which keeps the declaration whenever it might be needed).
    fn uses_default(&self, uri: &str) -> bool {
        self.name.namespace() == uri || self.elements().any(|e| e.uses_default(uri))
    }

    fn standalone_with(
        &self,
        source: &[u8],
        keep: impl Fn(&(String, String)) -> bool,
    ) -> Option<Bytes> {
        let whole = source.get(self.range.clone())?;
        let head = self.name_end.checked_sub(self.range.start)?;
        if head > whole.len() {
            return None;
        }
        let add: Vec<&(String, String)> = self
            .scope
            .iter()
            .filter(|(prefix, _)| !self.declared.contains(prefix))
            .filter(|decl| keep(decl))
            .collect();
        let extra: usize = add.iter().map(|(p, u)| p.len() + u.len() + 10).sum();
        let mut out = BytesMut::with_capacity(whole.len() + extra);
        out.extend_from_slice(&whole[..head]);
        for (prefix, uri) in add {
            out.extend_from_slice(b" xmlns");
            if !prefix.is_empty() {
                out.extend_from_slice(b":");
                out.extend_from_slice(prefix.as_bytes());
            }
            out.extend_from_slice(b"=\"");
            out.extend_from_slice(escape_attribute(uri).as_bytes());
            out.extend_from_slice(b"\"");
        }
        out.extend_from_slice(&whole[head..]);
        Some(out.freeze())
    }
}

/// The scope of an element declaring `own` inside `inherited`, and the prefixes it declares.
type Scope = (Arc<[(String, String)]>, Vec<String>);

fn element_scope(
    source: Source<'_>,
    inherited: &[(String, String)],
    own: &[NsDecl],
) -> Result<Scope, crate::scan::ScanError> {
    let mut declared = Vec::with_capacity(own.len());
    let mut scope: Vec<(String, String)> = inherited.to_vec();
    for decl in own {
        let prefix = source.lossy(decl.prefix.clone()).into_owned();
        let uri = uri_of(source, decl)?.into_owned();
        scope.retain(|(p, _)| *p != prefix);
        scope.push((prefix.clone(), uri));
        declared.push(prefix);
    }
    Ok((Arc::from(scope), declared))
}

fn close(stack: &mut [Element], root: &mut Option<Element>, element: Element) {
    match stack.last_mut() {
        Some(parent) => parent.children.push(Node::Element(element)),
        None => *root = Some(element),
    }
}

fn element_attributes(
    source: Source<'_>,
    scope: &[NsDecl],
    attrs: &[Attribute],
) -> Result<Vec<(QName, String)>, crate::scan::ScanError> {
    let mut out = Vec::new();
    let bytes = source.bytes();
    for attr in attrs {
        if NsDecl::from_attribute(bytes, attr).is_some() {
            continue;
        }
        let (prefix, local) = split_name(bytes, attr.name.clone());
        let ns = resolve_prefix(source, scope, &bytes[prefix], false)?;
        let raw = source.text(attr.value.clone()).unwrap_or_default();
        let value = unescape(raw).unwrap_or_default().into_owned();
        out.push((QName::new(ns, source.lossy(local)), value));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_names_attributes_and_text() {
        let xml = br#"<s:Security xmlns:s="urn:s" xmlns:u="urn:u"><s:Token u:Id="t1" plain="a&amp;b"><s:User>al&lt;ice</s:User><s:Pw><![CDATA[p<w]]></s:Pw></s:Token></s:Security>"#;
        let e = Element::parse(xml, &Limits::default()).unwrap();
        assert_eq!(e.name(), &QName::new("urn:s", "Security"));
        let token = e.child(&QName::new("urn:s", "Token")).unwrap();
        assert_eq!(token.attribute(&QName::new("urn:u", "Id")), Some("t1"));
        assert_eq!(token.attribute(&QName::new("", "plain")), Some("a&b"));
        assert_eq!(
            token.child(&QName::new("urn:s", "User")).unwrap().text(),
            "al<ice"
        );
        assert_eq!(
            token.child(&QName::new("urn:s", "Pw")).unwrap().text(),
            "p<w"
        );
    }

    #[test]
    fn resolves_qname_values_against_the_namespaces_in_scope() {
        let xml = br#"<a:Get xmlns:a="urn:a" xmlns="urn:default"><b:Item xmlns:b="urn:b" xmlns:a="urn:a2" ref="a:x">b:Temp</b:Item></a:Get>"#;
        let get = Element::parse(xml, &Limits::default()).unwrap();
        let item = get.child(&QName::new("urn:b", "Item")).unwrap();
        assert_eq!(
            item.resolve_qname(&item.text()),
            Some(QName::new("urn:b", "Temp"))
        );
        assert_eq!(
            item.resolve_qname(item.attribute(&QName::new("", "ref")).unwrap()),
            Some(QName::new("urn:a2", "x")),
            "the inner declaration of a wins"
        );
        assert_eq!(get.resolve_qname(" a:x\n"), Some(QName::new("urn:a", "x")));
        assert_eq!(get.resolve_qname("x"), Some(QName::new("urn:default", "x")));
        assert_eq!(get.resolve_qname("b:x"), None, "b is not declared on Get");
        assert_eq!(get.resolve_qname("a:"), None);
        assert_eq!(get.resolve_qname("a:b:c"), None);
        assert_eq!(get.resolve_qname("two words"), None);
        assert_eq!(item.namespaces().len(), 3);
    }

    #[test]
    fn standalone_children_carry_the_declarations_they_use() {
        let xml = br#"<r:Set xmlns:r="urn:r" xmlns:t="urn:t&amp;1"><r:Update><t:Temp unit="C">21</t:Temp><t:Note xmlns:t="urn:t2"/></r:Update></r:Set>"#;
        let set = Element::parse(xml, &Limits::default()).unwrap();
        let update = set.child(&QName::new("urn:r", "Update")).unwrap();
        let temp = update.child(&QName::new("urn:t&1", "Temp")).unwrap();
        assert_eq!(&xml[temp.range()], br#"<t:Temp unit="C">21</t:Temp>"#);
        let alone = temp.standalone(xml).unwrap();
        assert_eq!(
            &alone[..],
            br#"<t:Temp xmlns:r="urn:r" xmlns:t="urn:t&amp;1" unit="C">21</t:Temp>"#
        );
        let reparsed = Element::parse(&alone, &Limits::default()).unwrap();
        assert_eq!(reparsed.name(), temp.name());
        assert_eq!(reparsed.text(), "21");
        let note = update.child(&QName::new("urn:t2", "Note")).unwrap();
        assert_eq!(
            &note.standalone(xml).unwrap()[..],
            br#"<t:Note xmlns:r="urn:r" xmlns:t="urn:t2"/>"#,
            "its own declaration of t is kept, not doubled"
        );
        assert_eq!(&set.standalone(xml).unwrap()[..], &xml[..]);
        assert_eq!(temp.standalone(b"<short/>"), None);
    }

    #[test]
    fn a_minimal_standalone_element_keeps_only_the_declarations_it_can_use() {
        let xml = br#"<s:E xmlns:s="urn:s" xmlns:q="urn:q" xmlns:v="urn:v" xmlns="urn:d" xmlns:u="urn:u"><h:B xmlns:h="urn:h" type="q:T" xmlns:w="urn:w"><v:x/>u:1 <inner/></h:B></s:E>"#;
        let root = Element::parse(xml, &Limits::default()).unwrap();
        let block = root.elements().next().unwrap();
        let alone = block.standalone_minimal(xml).unwrap();
        assert_eq!(
            &alone[..],
            br#"<h:B xmlns:q="urn:q" xmlns:v="urn:v" xmlns="urn:d" xmlns:u="urn:u" xmlns:h="urn:h" type="q:T" xmlns:w="urn:w"><v:x/>u:1 <inner/></h:B>"#,
            "s is not used (xmlns: is no use of it); q in a QName value, v in a name, u in text and the default namespace of <inner/> are"
        );
        let reparsed = Element::parse(&alone, &Limits::default()).unwrap();
        assert_eq!(
            reparsed.resolve_qname("q:T"),
            Some(QName::new("urn:q", "T"))
        );
        let plain = br#"<s:E xmlns:s="urn:s" xmlns="urn:d"><a:B xmlns:a="urn:a"/></s:E>"#;
        let root = Element::parse(plain, &Limits::default()).unwrap();
        let b = root.elements().next().unwrap();
        assert_eq!(
            &b.standalone_minimal(plain).unwrap()[..],
            br#"<a:B xmlns:a="urn:a"/>"#
        );
    }

    #[test]
    fn refuses_what_envelopes_refuse() {
        let limits = Limits::default();
        assert_eq!(
            Element::parse(b"<!DOCTYPE x><x/>", &limits)
                .unwrap_err()
                .kind(),
            FaultKind::DoctypeForbidden
        );
        assert_eq!(
            Element::parse(b"<a/><b/>", &limits).unwrap_err().kind(),
            FaultKind::MalformedXml
        );
        assert_eq!(
            Element::parse(b"<p:a/>", &limits).unwrap_err().kind(),
            FaultKind::MalformedXml
        );
        assert_eq!(
            Element::parse(b"", &limits).unwrap_err().kind(),
            FaultKind::MalformedXml
        );
    }
}
