//! The streaming rewrite of Body content by a [`Mapping`]: start and end tags are renamed,
//! everything between them (text, comments, CDATA, processing instructions, references)
//! is copied byte for byte.
//!
//! Prefixes stay as written; only URIs and local names change. An element keeps its prefix
//! when that prefix is bound to its new namespace, else takes another prefix bound to it,
//! else re-declares its own prefix for the new namespace on itself (descendants that need
//! the old binding get their own declaration the same way). An attribute moved into a
//! namespace no prefix is bound to gets a new prefix `nsN` declared on its element.

use super::mapping::Mapping;
use super::scope::Scope;
use super::tag::StartTag;
use lather_envelope::escape::{escape_attribute, unescape};
use quick_xml::Reader;
use quick_xml::events::Event;
use std::ops::Range;

/// Why content could not be rewritten.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum RewriteError {
    /// The content is not namespace-well-formed XML.
    Malformed(String),
    /// The rules make the result ill-formed (e.g. two attributes with one name).
    Unmappable(String),
}

/// Rewrites `content`, whose namespace declarations in scope from outside (prefix, escaped
/// URI — the Envelope's and Body's) are `outside`. `None` if nothing changes.
pub(crate) fn rewrite(
    content: &[u8],
    outside: &[(String, String)],
    mapping: &Mapping,
) -> Result<Option<Vec<u8>>, RewriteError> {
    if mapping.is_empty() {
        return Ok(None);
    }
    let outside: Vec<(String, String)> = outside
        .iter()
        .map(|(p, uri)| {
            (
                p.clone(),
                unescape(uri).map_or(uri.clone(), |u| u.into_owned()),
            )
        })
        .collect();
    let mut names = Names {
        original: Scope::new(outside.clone()),
        output: Scope::new(outside),
        mapping,
    };
    let mut reader = Reader::from_reader(content);
    let mut out: Vec<u8> = Vec::new();
    let mut copied = 0;
    // The new name of each open element, when it changed.
    let mut open: Vec<Option<String>> = Vec::new();
    loop {
        let start = position(&reader);
        let event = reader
            .read_event()
            .map_err(|e| RewriteError::Malformed(format!("at byte {start}: {e}")))?;
        let end = position(&reader);
        let mut replace = |out: &mut Vec<u8>, with: &[u8]| {
            if out.is_empty() {
                out.reserve(content.len() + 64);
            }
            out.extend_from_slice(&content[copied..start]);
            out.extend_from_slice(with);
            copied = end;
        };
        match event {
            Event::Start(_) | Event::Empty(_) => {
                let raw = &content[start..end];
                let tag = StartTag::parse(raw).ok_or_else(|| {
                    RewriteError::Malformed(format!("unreadable start tag at byte {start}"))
                })?;
                names.original.open();
                names.output.open();
                let rewritten = names.start_tag(raw, &tag)?;
                if let Some(bytes) = &rewritten.bytes {
                    replace(&mut out, bytes);
                }
                if matches!(event, Event::Empty(_)) {
                    names.original.close();
                    names.output.close();
                } else {
                    open.push(rewritten.name);
                }
            }
            Event::End(_) => {
                names.original.close();
                names.output.close();
                if let Some(Some(name)) = open.pop() {
                    replace(&mut out, format!("</{name}>").as_bytes());
                }
            }
            Event::Eof => break,
            _ => {}
        }
    }
    if copied == 0 {
        return Ok(None);
    }
    out.extend_from_slice(&content[copied..]);
    Ok(Some(out))
}

fn position(reader: &Reader<&[u8]>) -> usize {
    usize::try_from(reader.buffer_position()).unwrap_or(usize::MAX)
}

/// A start tag after renaming: its new bytes and new name, each `None` when unchanged.
#[derive(Debug)]
struct Rewritten {
    bytes: Option<Vec<u8>>,
    name: Option<String>,
}

/// The bindings as written in the input and as they stand in the output, and the rules.
struct Names<'m> {
    original: Scope,
    output: Scope,
    mapping: &'m Mapping,
}

/// A namespace declaration of one start tag in the output.
struct Declaration {
    prefix: String,
    uri: String,
    /// Its attribute and the URI it declared in the input; `None` for an added declaration.
    input: Option<(usize, String)>,
}

impl Names<'_> {
    /// Renames the start tag `raw` (parsed as `tag`); its frames are open.
    fn start_tag(&mut self, raw: &[u8], tag: &StartTag) -> Result<Rewritten, RewriteError> {
        let text = |r: &Range<usize>| {
            std::str::from_utf8(&raw[r.clone()])
                .map_err(|_| RewriteError::Malformed("a tag is not UTF-8".into()))
        };
        let mut decls: Vec<Declaration> = Vec::new();
        for (i, attribute) in tag.attributes.iter().enumerate() {
            let Some(prefix) = declared_prefix(text(&attribute.name)?) else {
                continue;
            };
            let uri = unescape(text(&attribute.value)?)
                .ok_or_else(|| RewriteError::Malformed("bad reference in a namespace".into()))?;
            self.original.bind(prefix, &uri);
            let mapped = self.mapping.namespace(&uri).to_owned();
            self.output.bind(prefix, &mapped);
            decls.push(Declaration {
                prefix: prefix.to_owned(),
                uri: mapped,
                input: Some((i, uri.into_owned())),
            });
        }
        let mut edits: Vec<(Range<usize>, String)> = Vec::new();

        let qname = text(&tag.name)?;
        let (prefix, local) = split_qname(qname);
        let ns = self.resolve(prefix, true)?;
        let (new_ns, new_local) = self.mapping.element(&ns, local);
        let (new_ns, new_local) = (new_ns.to_owned(), new_local.to_owned());
        let new_prefix = if new_ns.is_empty() {
            if self.output.uri("") != Some("") {
                self.declare(&mut decls, "", "");
            }
            String::new()
        } else if self.output.uri(prefix) == Some(&new_ns) {
            prefix.to_owned()
        } else if let Some(other) = self.output.prefix_for(&new_ns, true) {
            other.to_owned()
        } else {
            self.declare(&mut decls, prefix, &new_ns);
            prefix.to_owned()
        };
        let new_qname = join_qname(&new_prefix, &new_local);
        let renamed = (new_qname != qname).then(|| new_qname.clone());
        if renamed.is_some() {
            edits.push((tag.name.clone(), new_qname));
        }

        let mut seen: Vec<(String, String)> = Vec::new();
        for attribute in &tag.attributes {
            let name = text(&attribute.name)?;
            if declared_prefix(name).is_some() {
                continue;
            }
            let (prefix, local) = split_qname(name);
            let ns = self.resolve(prefix, false)?;
            let (new_ns, new_local) = self.mapping.attribute(&ns, local);
            let key = (new_ns.to_owned(), new_local.to_owned());
            if seen.contains(&key) {
                return Err(RewriteError::Unmappable(format!(
                    "two attributes of <{qname}> would both be named {{{}}}{}",
                    key.0, key.1
                )));
            }
            seen.push(key);
            let (new_ns, new_local) = (new_ns.to_owned(), new_local.to_owned());
            let new_prefix = if new_ns.is_empty() {
                String::new()
            } else if !prefix.is_empty() && self.output.uri(prefix) == Some(&new_ns) {
                prefix.to_owned()
            } else if let Some(other) = self.output.prefix_for(&new_ns, false) {
                other.to_owned()
            } else {
                let fresh = self.output.fresh_prefix(&[]);
                self.declare(&mut decls, &fresh, &new_ns);
                fresh
            };
            let new_name = join_qname(&new_prefix, &new_local);
            if new_name != name {
                edits.push((attribute.name.clone(), new_name));
            }
        }

        let mut added = String::new();
        for decl in &decls {
            match &decl.input {
                Some((i, uri)) if *uri != decl.uri => edits.push((
                    tag.attributes[*i].value.clone(),
                    escape_attribute(&decl.uri).into_owned(),
                )),
                Some(_) => {}
                None if decl.prefix.is_empty() => {
                    added.push_str(&format!(r#" xmlns="{}""#, escape_attribute(&decl.uri)));
                }
                None => added.push_str(&format!(
                    r#" xmlns:{}="{}""#,
                    decl.prefix,
                    escape_attribute(&decl.uri)
                )),
            }
        }
        if !added.is_empty() {
            edits.push((tag.name.end..tag.name.end, added));
        }
        if edits.is_empty() {
            return Ok(Rewritten {
                bytes: None,
                name: None,
            });
        }
        // Stable: the declarations added after the name follow the name's own edit.
        edits.sort_by_key(|(range, _)| range.start);
        let extra: usize = edits.iter().map(|(_, with)| with.len()).sum();
        let mut bytes = Vec::with_capacity(raw.len() + extra);
        let mut at = 0;
        for (range, with) in &edits {
            bytes.extend_from_slice(&raw[at..range.start]);
            bytes.extend_from_slice(with.as_bytes());
            at = range.end;
        }
        bytes.extend_from_slice(&raw[at..]);
        Ok(Rewritten {
            bytes: Some(bytes),
            name: renamed,
        })
    }

    /// The namespace of a name with `prefix` as the input declares it.
    fn resolve(&self, prefix: &str, element: bool) -> Result<String, RewriteError> {
        if prefix.is_empty() && !element {
            return Ok(String::new());
        }
        self.original
            .uri(prefix)
            .map(str::to_owned)
            .ok_or_else(|| RewriteError::Malformed(format!("undeclared prefix {prefix:?}")))
    }

    /// Binds `prefix` to `uri` on the current element in the output: changes its own
    /// declaration of `prefix`, or adds one.
    fn declare(&mut self, decls: &mut Vec<Declaration>, prefix: &str, uri: &str) {
        self.output.bind(prefix, uri);
        match decls.iter_mut().find(|d| d.prefix == prefix) {
            Some(decl) => decl.uri = uri.to_owned(),
            None => decls.push(Declaration {
                prefix: prefix.to_owned(),
                uri: uri.to_owned(),
                input: None,
            }),
        }
    }
}

/// The prefix an attribute named `name` declares (`""` for `xmlns`), if it is a declaration.
fn declared_prefix(name: &str) -> Option<&str> {
    if name == "xmlns" {
        Some("")
    } else {
        name.strip_prefix("xmlns:")
    }
}

fn split_qname(name: &str) -> (&str, &str) {
    name.split_once(':').unwrap_or(("", name))
}

fn join_qname(prefix: &str, local: &str) -> String {
    if prefix.is_empty() {
        local.to_owned()
    } else {
        format!("{prefix}:{local}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RULES: &str = "namespace urn:old = urn:new\n\
        element {urn:old}getQuote = {urn:new}GetQuote\n\
        element {}legacy = {urn:other}Modern\n\
        attribute {}ref = {urn:attr}reference\n\
        attribute {urn:old}cur = {}currency\n";

    fn convert(content: &str, outside: &[(&str, &str)], reverse: bool) -> Option<String> {
        let mapping = Mapping::parse(RULES, reverse).unwrap();
        let outside: Vec<(String, String)> = outside
            .iter()
            .map(|(p, u)| ((*p).to_owned(), (*u).to_owned()))
            .collect();
        rewrite(content.as_bytes(), &outside, &mapping)
            .unwrap()
            .map(|b| String::from_utf8(b).unwrap())
    }

    #[test]
    fn renames_prefixed_elements_and_their_declarations() {
        let got = convert(
            r#"<o:getQuote xmlns:o="urn:old" id="1"> <o:symbol o:cur="EUR">LATH</o:symbol></o:getQuote>"#,
            &[],
            false,
        );
        assert_eq!(
            got.as_deref(),
            Some(
                r#"<o:GetQuote xmlns:o="urn:new" id="1"> <o:symbol currency="EUR">LATH</o:symbol></o:GetQuote>"#
            )
        );
    }

    #[test]
    fn renames_default_namespace_elements() {
        let got = convert(
            r#"<getQuote xmlns="urn:old"><symbol>LATH</symbol></getQuote>"#,
            &[],
            false,
        );
        assert_eq!(
            got.as_deref(),
            Some(r#"<GetQuote xmlns="urn:new"><symbol>LATH</symbol></GetQuote>"#)
        );
    }

    #[test]
    fn declares_prefixes_bound_outside_the_body_again() {
        let got = convert(
            r#"<o:getQuote><o:symbol>X</o:symbol></o:getQuote>"#,
            &[("o", "urn:old"), ("soap", "urn:soap")],
            false,
        );
        assert_eq!(
            got.as_deref(),
            Some(r#"<o:GetQuote xmlns:o="urn:new"><o:symbol>X</o:symbol></o:GetQuote>"#)
        );
    }

    #[test]
    fn adds_declarations_for_namespaces_without_a_prefix() {
        // An unqualified element moved into a namespace: a default declaration on it, and
        // its unqualified children get theirs back.
        let got = convert(r#"<legacy ref="a"><child/></legacy>"#, &[], false);
        assert_eq!(
            got.as_deref(),
            Some(
                r#"<Modern xmlns="urn:other" xmlns:ns0="urn:attr" ns0:reference="a"><child xmlns=""/></Modern>"#
            )
        );
    }

    #[test]
    fn leaves_text_comments_and_cdata_byte_for_byte() {
        let content = "<o:symbol xmlns:o=\"urn:old\">a &amp; b<!-- <o:x/> --><![CDATA[<o:y>]]>&#x20AC;\r\n<?pi <o:z/>?></o:symbol >";
        let got = convert(content, &[], false).unwrap();
        assert_eq!(
            got,
            "<o:symbol xmlns:o=\"urn:new\">a &amp; b<!-- <o:x/> --><![CDATA[<o:y>]]>&#x20AC;\r\n<?pi <o:z/>?></o:symbol >"
        );
    }

    #[test]
    fn untouched_content_is_no_change() {
        assert_eq!(
            convert(r#"<m:x xmlns:m="urn:m" a="1">t</m:x>"#, &[], false),
            None
        );
    }

    #[test]
    fn refuses_what_it_cannot_rename() {
        let mapping = Mapping::parse(RULES, false).unwrap();
        let err = rewrite(b"<p:x/>", &[], &mapping).unwrap_err();
        assert!(matches!(err, RewriteError::Malformed(_)), "{err:?}");
        let err = rewrite(
            br#"<x xmlns:o="urn:old" currency="1" o:cur="2"/>"#,
            &[],
            &mapping,
        )
        .unwrap_err();
        assert!(matches!(err, RewriteError::Unmappable(_)), "{err:?}");
    }
}
