//! A small read-only element tree for fragments such as header blocks: names resolved to
//! namespaces, attributes and text unescaped. For the Body, stay with the lazy envelope.

use crate::escape::unescape;
use crate::namespace::{NsDecl, collect_decls, resolve_element, resolve_prefix, split_name};
use crate::scan::{Event, Mode, Scanner, attributes, check_characters};
use crate::{Fault, FaultKind, Limits, QName};

/// An element with its attributes and children.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Element {
    name: QName,
    attributes: Vec<(QName, String)>,
    children: Vec<Node>,
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
        let fault = |e: crate::scan::ScanError| Fault::with_reason(e.kind, e.message);
        check_characters(bytes).map_err(fault)?;
        let mut scanner = Scanner::new(bytes, Mode::Fragment, *limits);
        let mut scope: Vec<NsDecl> = Vec::new();
        let mut frames: Vec<usize> = Vec::new();
        let mut stack: Vec<Element> = Vec::new();
        let mut root = None;
        loop {
            match scanner.next().map_err(fault)? {
                Event::Eof => break,
                Event::Start {
                    name, attrs, empty, ..
                } => {
                    if root.is_some() || (stack.is_empty() && scanner.top_level_elements() > 1) {
                        return Err(Fault::with_reason(
                            FaultKind::MalformedXml,
                            "more than one element",
                        ));
                    }
                    frames.push(scope.len());
                    collect_decls(bytes, attrs.clone(), &mut scope);
                    let element = Element {
                        name: resolve_element(bytes, &scope, name).map_err(fault)?,
                        attributes: element_attributes(bytes, &scope, attrs).map_err(fault)?,
                        children: Vec::new(),
                    };
                    if empty {
                        scope.truncate(frames.pop().unwrap_or(0));
                        close(&mut stack, &mut root, element);
                    } else {
                        stack.push(element);
                    }
                }
                Event::End { .. } => {
                    scope.truncate(frames.pop().unwrap_or(0));
                    if let Some(element) = stack.pop() {
                        close(&mut stack, &mut root, element);
                    }
                }
                Event::Text { range, cdata } => {
                    let raw = std::str::from_utf8(&bytes[range]).unwrap_or_default();
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
}

fn close(stack: &mut [Element], root: &mut Option<Element>, element: Element) {
    match stack.last_mut() {
        Some(parent) => parent.children.push(Node::Element(element)),
        None => *root = Some(element),
    }
}

fn element_attributes(
    bytes: &[u8],
    scope: &[NsDecl],
    attrs: std::ops::Range<usize>,
) -> Result<Vec<(QName, String)>, crate::scan::ScanError> {
    let mut out = Vec::new();
    for attr in attributes(bytes, attrs) {
        if NsDecl::from_attribute(bytes, &attr).is_some() {
            continue;
        }
        let (prefix, local) = split_name(bytes, attr.name.clone());
        let ns = resolve_prefix(bytes, scope, &bytes[prefix], false)?;
        let raw = std::str::from_utf8(&bytes[attr.value.clone()]).unwrap_or_default();
        let value = unescape(raw).unwrap_or_default().into_owned();
        out.push((
            QName::new(
                ns.into_owned(),
                String::from_utf8_lossy(&bytes[local]).into_owned(),
            ),
            value,
        ));
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
