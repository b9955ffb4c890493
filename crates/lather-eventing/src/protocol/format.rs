//! WS-Eventing 2011 notification formats (W3C Recommendation 13 December 2011, §2.3
//! "Notification Formats" and §4.1 `wse:Format`; the wrapped message is Appendix A's
//! `wse:Notify`, of `EventType` with an optional `actionURI` attribute, sent with the
//! action of Appendix D's `WrappedSinkPortType/NotifyEvent`):
//!
//! - Unwrap (the default): the event is the Body, with the event's own action;
//! - Wrap: the Body is `<wse:Notify actionURI="{the event's action}">{event}</wse:Notify>`
//!   and the message's `wsa:Action` is [`NOTIFY_EVENT_ACTION`].
//!
//! Any other `Format@Name` is refused with `wse:DeliveryFormatRequestedUnavailable`, whose
//! detail lists the supported ones as `wse:SupportedDeliveryFormat`.

use crate::Version;
use crate::protocol::problem::{Problem, Refusal, refuse};
use crate::protocol::version::UNWRAP_FORMAT;
use lather_envelope::{Element, QName};

/// The 2011 Wrap delivery format.
pub const WRAP_FORMAT: &str = "http://www.w3.org/2011/03/ws-evt/DeliveryFormats/Wrap";

/// The `wsa:Action` of a wrapped notification.
pub const NOTIFY_EVENT_ACTION: &str =
    "http://www.w3.org/2011/03/ws-evt/WrappedSinkPortType/NotifyEvent";

/// Whether a 2011 Subscribe (`element`) asks for the Wrap format; an unknown format is
/// refused. 2004/08 has no Format: always `false`.
pub(crate) fn wrapped(element: &Element, version: Version) -> Result<bool, Refusal> {
    if version.is_2004() {
        return Ok(false);
    }
    let Some(format) = element.child(&QName::new(version.eventing_ns(), "Format")) else {
        return Ok(false);
    };
    let name = format
        .attribute(&QName::new("", "Name"))
        .unwrap_or(UNWRAP_FORMAT)
        .trim();
    match name {
        UNWRAP_FORMAT => Ok(false),
        WRAP_FORMAT => Ok(true),
        other => refuse(
            Problem::Format,
            format!(
                "delivery format {other:?} is not supported; supported: {UNWRAP_FORMAT}, {WRAP_FORMAT}"
            ),
        ),
    }
}

/// The `wse:SupportedDeliveryFormat` elements of a DeliveryFormatRequestedUnavailable
/// fault's detail.
pub(crate) fn supported(version: Version) -> String {
    let wse = version.eventing_ns();
    [UNWRAP_FORMAT, WRAP_FORMAT]
        .iter()
        .map(|f| {
            format!(r#"<wse:SupportedDeliveryFormat xmlns:wse="{wse}">{f}</wse:SupportedDeliveryFormat>"#)
        })
        .collect()
}
