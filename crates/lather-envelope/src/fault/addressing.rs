//! How WS-Addressing faults are bound to SOAP: the `wsa:Action` fault header, `wsa:RelatesTo`
//! and the `wsa:ProblemHeaderQName` detail (WS-Addressing 1.0 SOAP Binding §6; the 2004/08
//! submission §4 has no detail element, so only the headers are written for it).
//!
//! A `wsa:RelatesTo` id or problem header name longer than [`MAX_URI_BYTES`] is left out,
//! so a request cannot make its fault large.

use super::Fault;
use super::bounds::{MAX_URI_BYTES, short_uri};
use crate::escape::{escape_attribute, escape_text};
use crate::{SoapVersion, WSA10_NS};

/// Writes the addressing header blocks of a fault in the WS-Addressing version `ns`:
/// `wsa:Action` = `action` (`{ns}/fault` for addressing faults), `wsa:RelatesTo` when the request's id is known and, for
/// WS-Addressing 1.0 in SOAP 1.1, `wsa:FaultDetail` with the problem header.
pub(super) fn write_headers(
    fault: &Fault,
    ns: &str,
    action: &str,
    version: SoapVersion,
    out: &mut String,
) {
    out.push_str(&format!(
        r#"<wsa:Action xmlns:wsa="{ns}">{}</wsa:Action>"#,
        escape_text(action)
    ));
    if let Some(id) = fault.relates_to_id().and_then(short_uri) {
        out.push_str(&format!(
            r#"<wsa:RelatesTo xmlns:wsa="{ns}">{}</wsa:RelatesTo>"#,
            escape_text(id)
        ));
    }
    if version == SoapVersion::V11 && ns == WSA10_NS && problem_header(fault).is_some() {
        out.push_str(&format!(r#"<wsa:FaultDetail xmlns:wsa="{ns}">"#));
        write_problem_header(fault, out);
        out.push_str("</wsa:FaultDetail>");
    }
}

/// Writes `<wsa:ProblemHeaderQName>` naming the fault's problem header, if it has one.
pub(super) fn write_problem_header(fault: &Fault, out: &mut String) {
    let Some(name) = problem_header(fault) else {
        return;
    };
    out.push_str(&format!(
        r#"<wsa:ProblemHeaderQName xmlns:wsa="{WSA10_NS}""#
    ));
    let local = escape_text(name.local());
    let qname = match name.namespace() {
        WSA10_NS => format!("wsa:{local}"),
        "" => local.into_owned(),
        ns => {
            out.push_str(&format!(r#" xmlns:h="{}""#, escape_attribute(ns)));
            format!("h:{local}")
        }
    };
    out.push_str(&format!(">{qname}</wsa:ProblemHeaderQName>"));
}

/// The fault's problem header name, if it has one short enough to write.
fn problem_header(fault: &Fault) -> Option<&crate::QName> {
    fault
        .problem_header_name()
        .filter(|n| n.namespace().len() + n.local().len() <= MAX_URI_BYTES)
}
