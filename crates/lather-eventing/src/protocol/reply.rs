//! The messages the source writes: responses, notifications, SubscriptionEnd.

use crate::{Endpoint, Subscription, Version};
use bytes::Bytes;
use lather_envelope::escape::escape_text;
use lather_envelope::{SoapVersion, WSA10_NS};

/// One message sent outside a subscription's queue (SubscriptionEnd): action, envelope.
#[derive(Debug, Clone)]
pub(crate) struct Outgoing {
    pub(crate) action: String,
    pub(crate) envelope: Bytes,
    /// The `Content-Encoding` of `envelope`, if it is compressed.
    pub(crate) content_encoding: Option<&'static str>,
}

/// A whole envelope in `soap` with `headers` (already serialised) and `body`.
pub(crate) fn envelope(soap: SoapVersion, headers: &str, body: &str) -> Bytes {
    let ns = soap.namespace();
    Bytes::from(format!(
        r#"<?xml version="1.0" encoding="UTF-8"?><s:Envelope xmlns:s="{ns}"><s:Header>{headers}</s:Header><s:Body>{body}</s:Body></s:Envelope>"#
    ))
}

/// `wsa:Action`, `wsa:To` (if given) and `wsa:RelatesTo` (if given), in `version`'s
/// addressing namespace.
pub(crate) fn addressing(
    version: Version,
    action: &str,
    to: Option<&str>,
    relates_to: Option<&str>,
) -> String {
    let wsa = version.addressing_ns();
    let mut out = format!(
        r#"<wsa:Action xmlns:wsa="{wsa}">{}</wsa:Action>"#,
        escape_text(action)
    );
    if let Some(to) = to {
        out.push_str(&format!(
            r#"<wsa:To xmlns:wsa="{wsa}">{}</wsa:To>"#,
            escape_text(to)
        ));
    }
    if let Some(id) = relates_to {
        out.push_str(&format!(
            r#"<wsa:RelatesTo xmlns:wsa="{wsa}">{}</wsa:RelatesTo>"#,
            escape_text(id)
        ));
    }
    out
}

/// The subscription manager EPR (`element` = `SubscriptionManager`) with the identifier as
/// its reference parameter.
fn manager_epr(version: Version, manager: &str, id: &str) -> String {
    let wse = version.eventing_ns();
    let wsa = version.addressing_ns();
    let (id_ns, id_local) = version.identifier();
    format!(
        r#"<wse:SubscriptionManager xmlns:wse="{wse}" xmlns:wsa="{wsa}"><wsa:Address>{}</wsa:Address><wsa:ReferenceParameters><i:{id_local} xmlns:i="{id_ns}">{}</i:{id_local}></wsa:ReferenceParameters></wse:SubscriptionManager>"#,
        escape_text(manager),
        escape_text(id)
    )
}

/// The name of the element stating the granted expiration: `Expires` (2004/08) or
/// `GrantedExpires` (2011).
fn granted_name(version: Version) -> &'static str {
    if version.is_2004() {
        "Expires"
    } else {
        "GrantedExpires"
    }
}

/// The SubscribeResponse body.
pub(crate) fn subscribe_response(version: Version, sub: &Subscription, granted: &str) -> String {
    let wse = version.eventing_ns();
    let name = granted_name(version);
    format!(
        r#"<wse:SubscribeResponse xmlns:wse="{wse}">{}<wse:{name}>{granted}</wse:{name}></wse:SubscribeResponse>"#,
        manager_epr(version, &sub.manager, &sub.id)
    )
}

/// The body of a RenewResponse or GetStatusResponse (`element`) stating `granted`.
pub(crate) fn granted_response(version: Version, element: &str, granted: &str) -> String {
    let wse = version.eventing_ns();
    let name = granted_name(version);
    format!(
        r#"<wse:{element} xmlns:wse="{wse}"><wse:{name}>{granted}</wse:{name}></wse:{element}>"#
    )
}

/// The UnsubscribeResponse body: nothing in 2004/08 (the submission answers with an empty
/// Body and its schema declares no `UnsubscribeResponse` element, so schema-validating
/// subscribers such as `sdc11073` refuse one), an empty `wse:UnsubscribeResponse` in 2011.
pub(crate) fn unsubscribe_response(version: Version) -> String {
    if version.is_2004() {
        return String::new();
    }
    format!(
        r#"<wse:UnsubscribeResponse xmlns:wse="{}"/>"#,
        version.eventing_ns()
    )
}

/// Why a subscription ended, as the `Status` URI's last segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EndStatus {
    /// Notifications could not be delivered.
    DeliveryFailure,
    /// The source is going away.
    SourceShuttingDown,
    /// The source cancelled the subscription for another reason.
    SourceCancelling,
}

impl EndStatus {
    /// The `Status` URI's last segment.
    pub(crate) fn name(self) -> &'static str {
        match self {
            EndStatus::DeliveryFailure => "DeliveryFailure",
            EndStatus::SourceShuttingDown => "SourceShuttingDown",
            EndStatus::SourceCancelling => "SourceCancelling",
        }
    }
}

/// The SubscriptionEnd message for `sub`, to its EndTo `end_to`.
pub(crate) fn subscription_end(
    sub: &Subscription,
    end_to: &Endpoint,
    status: EndStatus,
    reason: &str,
) -> Bytes {
    let version = sub.version;
    let wse = version.eventing_ns();
    let manager = if version.is_2004() {
        manager_epr(version, &sub.manager, &sub.id)
    } else {
        String::new()
    };
    let body = format!(
        r#"<wse:SubscriptionEnd xmlns:wse="{wse}">{manager}<wse:Status>{wse}/{}</wse:Status><wse:Reason xml:lang="en">{}</wse:Reason></wse:SubscriptionEnd>"#,
        status.name(),
        escape_text(reason)
    );
    let headers = outbound_headers(
        version,
        end_to,
        &version.action("SubscriptionEnd"),
        &crate::protocol::subscription::new_uuid(),
    );
    envelope(soap_of(sub), &headers, &body)
}

/// A notification carrying `event` (a standalone element) for `sub`, built whole (the
/// WS-BaseNotification raw form; WS-Eventing sinks render theirs from `binding::soap`).
pub(crate) fn notification(sub: &Subscription, action: &str, event: &[u8]) -> Bytes {
    let headers = outbound_headers(
        sub.version,
        &sub.notify_to,
        action,
        &crate::protocol::subscription::new_uuid(),
    );
    envelope(
        soap_of(sub),
        &headers,
        std::str::from_utf8(event).unwrap_or(""),
    )
}

/// The SOAP version of `sub`'s messages.
pub(crate) fn soap_of(sub: &Subscription) -> SoapVersion {
    if sub.soap12 {
        SoapVersion::V12
    } else {
        SoapVersion::V11
    }
}

/// `wsa:To`, `wsa:Action`, `wsa:MessageID` and the endpoint's reference parameters as
/// header blocks (marked `wsa:IsReferenceParameter="true"` under WS-Addressing 1.0).
pub(crate) fn outbound_headers(
    version: Version,
    to: &Endpoint,
    action: &str,
    message_id: &str,
) -> String {
    let wsa = version.addressing_ns();
    let mut out = addressing(version, action, Some(&to.address), None);
    out.push_str(&format!(
        r#"<wsa:MessageID xmlns:wsa="{wsa}">{message_id}</wsa:MessageID>"#
    ));
    for param in &to.params {
        if wsa == WSA10_NS {
            out.push_str(&mark_reference_parameter(param));
        } else {
            out.push_str(param);
        }
    }
    out
}

/// `element` with `wsa:IsReferenceParameter="true"` added to its start tag.
pub(crate) fn mark_reference_parameter(element: &str) -> String {
    let name_end = element
        .char_indices()
        .skip(1)
        .find(|(_, c)| c.is_whitespace() || *c == '>' || *c == '/')
        .map_or(element.len(), |(i, _)| i);
    format!(
        r#"{} xmlns:lwsa="{WSA10_NS}" lwsa:IsReferenceParameter="true"{}"#,
        &element[..name_end],
        &element[name_end..]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_parameters_are_marked_after_their_name() {
        assert_eq!(
            mark_reference_parameter(r#"<p:k xmlns:p="urn:p">v</p:k>"#),
            format!(
                r#"<p:k xmlns:lwsa="{WSA10_NS}" lwsa:IsReferenceParameter="true" xmlns:p="urn:p">v</p:k>"#
            )
        );
        assert_eq!(
            mark_reference_parameter("<k/>"),
            format!(r#"<k xmlns:lwsa="{WSA10_NS}" lwsa:IsReferenceParameter="true"/>"#)
        );
    }
}
