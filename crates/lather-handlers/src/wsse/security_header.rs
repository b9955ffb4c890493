//! The `wsse:Security` header block aimed at this node: finding it (one at most, as
//! WS-Security 1.1 §6.1 requires), and the patches that take it out of the message — or
//! some of its parts — once it has been processed, as the WS-Security processing model
//! asks of the node it targets.

use bytes::{Bytes, BytesMut};
use lather_envelope::{
    Element, Envelope, Fault, FaultKind, HeaderBlock, QName, SOAP11_NS, SOAP12_NS, SoapVersion,
    WSSE_NS,
};
use lather_pipeline::Patch;
use std::ops::Range;

/// The SOAP 1.2 ultimate receiver's role URI.
const ROLE_ULTIMATE: &str = "http://www.w3.org/2003/05/soap-envelope/role/ultimateReceiver";

/// `{wsse}Security`.
pub(crate) fn security_name() -> QName {
    QName::new(WSSE_NS, "Security")
}

/// Whether a Security block with this role (actor in SOAP 1.1) is for this node: no role
/// (or an empty one), the `next` role, or SOAP 1.2's ultimate receiver. A block for any
/// other role is some other node's, and left alone.
fn aimed_here(version: SoapVersion, role: Option<&str>) -> bool {
    match role {
        None | Some("") => true,
        Some(r) => r == version.next_role() || (version == SoapVersion::V12 && r == ROLE_ULTIMATE),
    }
}

/// The `wsse:Security` block aimed at this node, or `None` if there is none. Two such
/// blocks are a `wsse:InvalidSecurity` fault: WS-Security 1.1 forbids two Security headers
/// for one role, and which one to trust would be ambiguous (one checked, the other passed
/// on).
pub(crate) fn find(envelope: &Envelope) -> Result<Option<&HeaderBlock>, Fault> {
    let name = security_name();
    let version = envelope.version();
    let mut ours = envelope
        .headers()
        .iter()
        .filter(|b| b.name() == &name && aimed_here(version, b.role()));
    let first = ours.next();
    if ours.next().is_some() {
        return Err(Fault::with_reason(
            FaultKind::InvalidSecurity,
            "more than one wsse:Security header is aimed at this node",
        ));
    }
    Ok(first)
}

/// The patch that puts `replacement` (or nothing) in the place of the Security block aimed
/// at this node, leaving the Security blocks of other roles as they were. Those are
/// written again after the other header blocks when there are any (a patch names blocks by
/// name, not position), in their order.
pub(crate) fn replace(envelope: &Envelope, replacement: Option<Bytes>) -> Patch {
    let name = security_name();
    let version = envelope.version();
    let others: Vec<Bytes> = envelope
        .headers()
        .iter()
        .filter(|b| b.name() == &name && !aimed_here(version, b.role()))
        .map(|b| envelope.extract_header(b))
        .collect();
    if others.is_empty() {
        return match replacement {
            Some(block) => Patch::new().replace_header(name, block),
            None => Patch::new().remove_header(name),
        };
    }
    let mut patch = Patch::new().remove_header(name.clone());
    for block in others.into_iter().chain(replacement) {
        patch = patch.add_header(name.clone(), block);
    }
    patch
}

/// `block` (a Security block standing alone, parsed as `security`) without the byte
/// ranges `cut` (elements inside it, not overlapping) and, with `drop_must_understand`,
/// without its SOAP `mustUnderstand` attribute.
pub(crate) fn rewrite(
    block: &[u8],
    security: &Element,
    mut cut: Vec<Range<usize>>,
    drop_must_understand: bool,
) -> Bytes {
    if drop_must_understand {
        cut.extend(must_understand_ranges(block, security));
    }
    cut.sort_by_key(|r| r.start);
    let mut out = BytesMut::with_capacity(block.len());
    let mut at = 0;
    for range in cut {
        if range.start < at || range.end > block.len() {
            continue;
        }
        out.extend_from_slice(&block[at..range.start]);
        at = range.end;
    }
    out.extend_from_slice(&block[at..]);
    out.freeze()
}

/// The byte ranges (leading white space included) of the SOAP `mustUnderstand` attributes
/// on the start tag of `element`, found in `source`, the bytes it was parsed from.
fn must_understand_ranges(source: &[u8], element: &Element) -> Vec<Range<usize>> {
    let soap_prefix = |prefix: &[u8]| {
        element.namespaces().iter().any(|(p, uri)| {
            p.as_bytes() == prefix && (uri == SOAP11_NS || uri == SOAP12_NS) && !p.is_empty()
        })
    };
    start_tag_attributes(source, element.range().start)
        .into_iter()
        .filter(|a| {
            let name = &source[a.name.clone()];
            match name.iter().position(|&c| c == b':') {
                Some(colon) => {
                    &name[colon + 1..] == b"mustUnderstand" && soap_prefix(&name[..colon])
                }
                None => false,
            }
        })
        .map(|a| a.whole)
        .collect()
}

/// One attribute of a start tag.
struct Attribute {
    /// From the white space before the name to the closing quote.
    whole: Range<usize>,
    /// The qualified name.
    name: Range<usize>,
}

/// The attributes of the start tag opening at `start` (its `<`) in well-formed `source`.
fn start_tag_attributes(source: &[u8], start: usize) -> Vec<Attribute> {
    let is_space = |c: u8| matches!(c, b' ' | b'\t' | b'\r' | b'\n');
    let mut out = Vec::new();
    let mut i = start + 1;
    while i < source.len() && !is_space(source[i]) && !matches!(source[i], b'/' | b'>') {
        i += 1;
    }
    loop {
        let space = i;
        while i < source.len() && is_space(source[i]) {
            i += 1;
        }
        if i >= source.len() || matches!(source[i], b'/' | b'>') {
            return out;
        }
        let name_start = i;
        while i < source.len() && !is_space(source[i]) && source[i] != b'=' {
            i += 1;
        }
        let name = name_start..i;
        while i < source.len() && source[i] != b'\'' && source[i] != b'"' {
            i += 1;
        }
        let Some(&quote) = source.get(i) else {
            return out;
        };
        i += 1;
        while i < source.len() && source[i] != quote {
            i += 1;
        }
        i += 1;
        out.push(Attribute {
            whole: space..i.min(source.len()),
            name,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lather_envelope::Limits;

    fn envelope(version: SoapVersion, header: &str) -> Envelope {
        let ns = version.namespace();
        let text = format!(
            r#"<s:Envelope xmlns:s="{ns}"><s:Header>{header}</s:Header><s:Body/></s:Envelope>"#
        );
        Envelope::parse(text.into(), &Limits::default()).unwrap()
    }

    fn security(attrs: &str) -> String {
        format!(r#"<wsse:Security xmlns:wsse="{WSSE_NS}"{attrs}><wsse:X/></wsse:Security>"#)
    }

    #[test]
    fn one_block_per_node_and_other_roles_left_alone() {
        let v = SoapVersion::V11;
        let mine = security("");
        let theirs = security(r#" s:actor="urn:backend""#);
        let next = security(&format!(r#" s:actor="{}""#, v.next_role()));
        let e = envelope(v, &format!("{theirs}{mine}"));
        assert_eq!(find(&e).unwrap().unwrap().role(), None);
        let e = envelope(v, &theirs);
        assert!(find(&e).unwrap().is_none());
        let e = envelope(v, &format!("{mine}{next}"));
        assert_eq!(find(&e).unwrap_err().kind(), FaultKind::InvalidSecurity);
        let e = envelope(v, &format!("{mine}{mine}"));
        assert_eq!(find(&e).unwrap_err().kind(), FaultKind::InvalidSecurity);
        let v = SoapVersion::V12;
        let ultimate = security(&format!(r#" s:role="{ROLE_ULTIMATE}""#));
        let e = envelope(v, &format!("{}{ultimate}", security("")));
        assert_eq!(find(&e).unwrap_err().kind(), FaultKind::InvalidSecurity);
    }

    #[test]
    fn removal_keeps_the_blocks_of_other_roles() {
        let v = SoapVersion::V11;
        let theirs = security(r#" s:actor="urn:backend""#);
        let e = envelope(v, &format!("{}{theirs}", security("")));
        let ops = replace(&e, None);
        let ops = ops.operations();
        assert_eq!(ops.len(), 2, "{ops:?}");
        let lather_pipeline::PatchOp::AddHeader(_, kept) = &ops[1] else {
            panic!("{ops:?}")
        };
        assert!(std::str::from_utf8(kept).unwrap().contains("urn:backend"));
        let alone = envelope(v, &security(""));
        assert_eq!(
            replace(&alone, None).operations(),
            Patch::new().remove_header(security_name()).operations()
        );
    }

    #[test]
    fn rewriting_drops_mandatory_flags_and_cut_parts() {
        let block = format!(
            r#"<wsse:Security xmlns:wsse="{WSSE_NS}" xmlns:s="{SOAP11_NS}" s:mustUnderstand="1" a='x>y' mustUnderstand="1"><wsse:X/><wsse:Y>y</wsse:Y></wsse:Security>"#
        );
        let element = Element::parse(block.as_bytes(), &Limits::default()).unwrap();
        let y = element.child(&QName::new(WSSE_NS, "Y")).unwrap().range();
        let out = rewrite(block.as_bytes(), &element, vec![y], true);
        let out = std::str::from_utf8(&out).unwrap();
        assert_eq!(
            out,
            format!(
                r#"<wsse:Security xmlns:wsse="{WSSE_NS}" xmlns:s="{SOAP11_NS}" a='x>y' mustUnderstand="1"><wsse:X/></wsse:Security>"#
            )
        );
        Element::parse(out.as_bytes(), &Limits::default()).unwrap();
    }
}
