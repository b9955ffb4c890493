//! The request envelopes the client sends: Subscribe, Renew, GetStatus, Unsubscribe.

use super::{Filter, SubscribeOptions};
use crate::protocol::format::WRAP_FORMAT;
use crate::protocol::reply::{addressing, envelope, mark_reference_parameter};
use crate::protocol::subscription::new_uuid;
use crate::protocol::version::{LATHER_EVENTING_NS, PUSH_MODE};
use crate::{Endpoint, Version};
use bytes::Bytes;
use lather_envelope::escape::{escape_attribute, escape_text};
use lather_envelope::{SoapVersion, WSA10_NS};

/// A request envelope and its action.
#[derive(Debug, Clone)]
pub(crate) struct Outbound {
    pub(crate) action: String,
    pub(crate) envelope: Bytes,
}

/// A whole request to `to` with `body`; `params` (the target EPR's reference parameters)
/// go along as header blocks.
fn request(
    version: Version,
    soap: SoapVersion,
    operation: &str,
    to: &str,
    params: &[String],
    body: &str,
) -> Outbound {
    let action = version.action(operation);
    let wsa = version.addressing_ns();
    let mut headers = addressing(version, &action, Some(to), None);
    headers.push_str(&format!(
        r#"<wsa:MessageID xmlns:wsa="{wsa}">{}</wsa:MessageID><wsa:ReplyTo xmlns:wsa="{wsa}"><wsa:Address>{}</wsa:Address></wsa:ReplyTo>"#,
        new_uuid(),
        escape_text(&version.anonymous())
    ));
    for param in params {
        if wsa == WSA10_NS {
            headers.push_str(&mark_reference_parameter(param));
        } else {
            headers.push_str(param);
        }
    }
    Outbound {
        action,
        envelope: envelope(soap, &headers, body),
    }
}

/// An endpoint reference's content: `wsa:Address` and its reference parameters.
fn epr(endpoint: &Endpoint) -> String {
    let mut out = format!(
        "<wsa:Address>{}</wsa:Address>",
        escape_text(&endpoint.address)
    );
    if !endpoint.params.is_empty() {
        out.push_str("<wsa:ReferenceParameters>");
        out.extend(endpoint.params.iter().map(String::as_str));
        out.push_str("</wsa:ReferenceParameters>");
    }
    out
}

fn filter(f: &Filter) -> String {
    let mut out = format!(r#"<wse:Filter Dialect="{}""#, escape_attribute(&f.dialect));
    for (prefix, ns) in &f.namespaces {
        out.push_str(&format!(r#" xmlns:{prefix}="{}""#, escape_attribute(ns)));
    }
    out.push_str(&format!(">{}</wse:Filter>", escape_text(&f.text)));
    out
}

/// The Subscribe request to the source at `source`.
pub(crate) fn subscribe(source: &str, options: &SubscribeOptions) -> Outbound {
    let version = options.version;
    let wse = version.eventing_ns();
    let wsa = version.addressing_ns();
    let mut body = format!(r#"<wse:Subscribe xmlns:wse="{wse}" xmlns:wsa="{wsa}">"#);
    if let Some(end_to) = &options.end_to {
        body.push_str(&format!("<wse:EndTo>{}</wse:EndTo>", epr(end_to)));
    }
    let mode = if version.is_2004() {
        format!(r#" Mode="{PUSH_MODE}""#)
    } else {
        String::new()
    };
    let compression = if options.gzip {
        format!(r#"<lev:Compression xmlns:lev="{LATHER_EVENTING_NS}">gzip</lev:Compression>"#)
    } else {
        String::new()
    };
    body.push_str(&format!(
        "<wse:Delivery{mode}><wse:NotifyTo>{}</wse:NotifyTo>{compression}</wse:Delivery>",
        epr(&options.notify_to)
    ));
    if options.wrap && !version.is_2004() {
        body.push_str(&format!(r#"<wse:Format Name="{WRAP_FORMAT}"/>"#));
    }
    if let Some(expires) = &options.expires {
        body.push_str(&expires_element(version, expires, options.best_effort));
    }
    if let Some(f) = &options.filter {
        body.push_str(&filter(f));
    }
    body.push_str("</wse:Subscribe>");
    request(version, options.soap, "Subscribe", source, &[], &body)
}

fn expires_element(version: Version, expires: &str, best_effort: bool) -> String {
    let attribute = if best_effort && !version.is_2004() {
        r#" BestEffort="true""#
    } else {
        ""
    };
    format!(
        "<wse:Expires{attribute}>{}</wse:Expires>",
        escape_text(expires)
    )
}

/// A Renew, GetStatus or Unsubscribe (`operation`) to the subscription manager `manager`.
pub(crate) fn to_manager(
    version: Version,
    soap: SoapVersion,
    operation: &str,
    manager: &Endpoint,
    expires: Option<&str>,
) -> Outbound {
    let wse = version.eventing_ns();
    let inner = expires.map_or(String::new(), |e| expires_element(version, e, true));
    let body = format!(r#"<wse:{operation} xmlns:wse="{wse}">{inner}</wse:{operation}>"#);
    request(
        version,
        soap,
        operation,
        &manager.address,
        &manager.params,
        &body,
    )
}
