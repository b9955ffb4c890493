//! Namespace declarations of the envelope skeleton and name resolution against them.

use crate::escape::unescape;
use crate::find::find_byte;
use crate::scan::{Attribute, ScanError, attributes};
use crate::source::Source;
use crate::{FaultKind, QName};
use std::borrow::Cow;
use std::ops::Range;

/// The XML namespace, bound to `xml` without a declaration.
pub const XML_NS: &str = "http://www.w3.org/XML/1998/namespace";

/// The namespace of `xmlns` attributes, bound without a declaration.
const XMLNS_NS: &str = "http://www.w3.org/2000/xmlns/";

/// A namespace declaration (`xmlns="…"` or `xmlns:p="…"`) found on an element.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NsDecl {
    /// The prefix; empty for the default namespace.
    pub(crate) prefix: Range<usize>,
    /// The raw (escaped) URI.
    pub(crate) uri: Range<usize>,
    /// The whole attribute text, copied verbatim when a part is extracted.
    pub(crate) attribute: Range<usize>,
}

impl NsDecl {
    /// The declaration if `attr` is one.
    pub(crate) fn from_attribute(buf: &[u8], attr: &Attribute) -> Option<NsDecl> {
        let name = &buf[attr.name.clone()];
        let prefix = if name == b"xmlns" {
            attr.name.end..attr.name.end
        } else if name.starts_with(b"xmlns:") {
            attr.name.start + 6..attr.name.end
        } else {
            return None;
        };
        Some(NsDecl {
            prefix,
            uri: attr.value.clone(),
            attribute: attr.whole.clone(),
        })
    }
}

/// Pushes the declarations among the attributes in `attrs` onto `scope`.
pub(crate) fn collect_decls(buf: &[u8], attrs: Range<usize>, scope: &mut Vec<NsDecl>) {
    push_decls(buf, attributes(buf, attrs), scope);
}

/// Pushes the declarations among `attrs` (a tag's attributes, read) onto `scope`.
pub(crate) fn push_decls<A: std::borrow::Borrow<Attribute>>(
    buf: &[u8],
    attrs: impl IntoIterator<Item = A>,
    scope: &mut Vec<NsDecl>,
) {
    for attr in attrs {
        if let Some(decl) = NsDecl::from_attribute(buf, attr.borrow()) {
            scope.push(decl);
        }
    }
}

/// Splits a qualified name into prefix (empty if none) and local part.
pub(crate) fn split_name(buf: &[u8], name: Range<usize>) -> (Range<usize>, Range<usize>) {
    match find_byte(b':', &buf[name.clone()]) {
        Some(i) => (name.start..name.start + i, name.start + i + 1..name.end),
        None => (name.start..name.start, name),
    }
}

/// The URI bound to `prefix` in `scope` (searched innermost first).
///
/// An element's unprefixed name takes the default namespace; an unprefixed attribute has
/// none, so callers pass `element = false` for attributes.
pub(crate) fn resolve_prefix<'a>(
    source: Source<'a>,
    scope: &[NsDecl],
    prefix: &[u8],
    element: bool,
) -> Result<Cow<'a, str>, ScanError> {
    let buf = source.bytes();
    if prefix == b"xml" {
        return Ok(Cow::Borrowed(XML_NS));
    }
    if prefix == b"xmlns" {
        return Ok(Cow::Borrowed(XMLNS_NS));
    }
    if prefix.is_empty() && !element {
        return Ok(Cow::Borrowed(""));
    }
    match scope
        .iter()
        .rev()
        .find(|d| &buf[d.prefix.clone()] == prefix)
    {
        Some(decl) => uri_of(source, decl),
        None if prefix.is_empty() => Ok(Cow::Borrowed("")),
        None => Err(ScanError::new(
            FaultKind::MalformedXml,
            format!(
                "undeclared namespace prefix {:?}",
                String::from_utf8_lossy(prefix)
            ),
        )),
    }
}

/// The unescaped URI of `decl`.
pub(crate) fn uri_of<'a>(source: Source<'a>, decl: &NsDecl) -> Result<Cow<'a, str>, ScanError> {
    let raw = source
        .text(decl.uri.clone())
        .ok_or_else(|| ScanError::new(FaultKind::NotUtf8, "namespace URI"))?;
    unescape(raw).ok_or_else(|| {
        ScanError::new(
            FaultKind::MalformedXml,
            "invalid reference in namespace URI",
        )
    })
}

/// Resolves an element name against `scope`.
pub(crate) fn resolve_element(
    source: Source<'_>,
    scope: &[NsDecl],
    name: Range<usize>,
) -> Result<QName, ScanError> {
    let (ns, local) = resolve_parts(source, scope, name)?;
    Ok(QName::new(ns, local))
}

/// An element name's namespace and local part, resolved against `scope`, borrowed from
/// the buffer where they can be (nothing allocated for a URI without references).
pub(crate) fn resolve_parts<'a>(
    source: Source<'a>,
    scope: &[NsDecl],
    name: Range<usize>,
) -> Result<(Cow<'a, str>, Cow<'a, str>), ScanError> {
    let buf = source.bytes();
    let (prefix, local) = split_name(buf, name);
    let ns = resolve_prefix(source, scope, &buf[prefix], true)?;
    Ok((ns, source.lossy(local)))
}

/// The declarations of `outer` then `inner` with shadowed prefixes removed and prefixes in
/// `except` left out: what must be added to an element moved out of its context.
pub(crate) fn in_scope<'s>(
    buf: &[u8],
    outer: &'s [NsDecl],
    inner: &'s [NsDecl],
    except: &[&[u8]],
) -> Vec<&'s NsDecl> {
    let mut out: Vec<&NsDecl> = Vec::with_capacity(outer.len() + inner.len());
    for decl in outer.iter().chain(inner) {
        let prefix = &buf[decl.prefix.clone()];
        if except.contains(&prefix) {
            continue;
        }
        out.retain(|d| buf[d.prefix.clone()] != *prefix);
        out.push(decl);
    }
    out
}
