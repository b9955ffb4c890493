//! A subscription's notification envelope, built from parts made once per subscription:
//! per notification only the action, the message id, the stamp, the event's headers and
//! the event itself are copied in, into one buffer of the right size. A 2011 subscription
//! in the Wrap format gets the event inside `wse:Notify@actionURI` ([`crate::protocol::format`]).

use super::wire::Out;
use crate::delivery::stamped::Stamped;
use crate::protocol::reply::{mark_reference_parameter, soap_of};
use crate::{LATHER_EVENTING_NS, Subscription, WsnTerms};
use lather_envelope::WSA10_NS;
use lather_envelope::escape::escape_text;

/// The fixed parts of one subscription's notifications.
#[derive(Debug, Clone)]
pub(crate) struct Template {
    /// Up to the start of the `wsa:Action` text.
    head: String,
    /// From the end of the action to the start of the message id's UUID.
    before_id: String,
    /// From the end of the message id to the stamp's `seq` value.
    before_stamp: String,
    /// Random bits the per-notification message id is derived from.
    id_base: [u8; 16],
    /// A WS-BaseNotification subscription's notifications are built whole by
    /// `crate::protocol::wsn::outgoing` (raw event or `wsnt:Notify`) instead.
    wsn: Option<Box<WsnParts>>,
    /// The Wrap format: the Body is `wse:Notify` with the event's action as `actionURI`.
    wrapped: bool,
}

/// Opens a wrapped notification's `wse:Notify` up to its `actionURI` value.
const NOTIFY_OPEN: &str = r#"<wse:Notify xmlns:wse="http://www.w3.org/2011/03/ws-evt" actionURI=""#;
/// Closes a wrapped notification.
const NOTIFY_CLOSE: &str = "</wse:Notify>";

/// What a WS-BaseNotification subscription's notifications are built from.
#[derive(Debug, Clone)]
struct WsnParts {
    sub: Subscription,
    terms: WsnTerms,
    /// The Notify action, or `None` when the raw event goes with its own action.
    action: Option<String>,
}

/// Closes the envelope after the event.
const TAIL: &str = "</s:Body></s:Envelope>";

impl Template {
    /// The template of `sub`'s notifications.
    pub(crate) fn new(sub: &Subscription) -> Template {
        let ns = soap_of(sub).namespace();
        let wsa = sub.version.addressing_ns();
        // The addressing and stamp namespaces are declared once, on the Envelope: ~100
        // bytes less per notification than declaring them on each header block.
        let head = format!(
            r#"<?xml version="1.0" encoding="UTF-8"?><s:Envelope xmlns:s="{ns}" xmlns:wsa="{wsa}" xmlns:lev="{LATHER_EVENTING_NS}"><s:Header><wsa:Action>"#
        );
        let before_id = format!(
            r#"</wsa:Action><wsa:To>{}</wsa:To><wsa:MessageID>urn:uuid:"#,
            escape_text(&sub.notify_to.address)
        );
        let mut before_stamp = String::from("</wsa:MessageID>");
        for param in &sub.notify_to.params {
            if wsa == WSA10_NS {
                before_stamp.push_str(&mark_reference_parameter(param));
            } else {
                before_stamp.push_str(param);
            }
        }
        before_stamp.push_str(r#"<lev:EventStamp seq=""#);
        let mut id_base = [0u8; 16];
        let _ = getrandom::fill(&mut id_base);
        let wsn = sub.wsn.as_ref().map(|terms| {
            Box::new(WsnParts {
                sub: sub.clone(),
                terms: terms.clone(),
                action: (!terms.raw).then(crate::protocol::wsn::notify_action),
            })
        });
        Template {
            head,
            before_id,
            before_stamp,
            id_base,
            wsn,
            wrapped: sub.wrapped,
        }
    }

    /// The `wsa:Action` of `event`'s notification.
    pub(crate) fn action<'a>(&'a self, event: &'a Stamped) -> &'a str {
        if self.wrapped {
            return crate::NOTIFY_EVENT_ACTION;
        }
        match self.wsn.as_ref().and_then(|w| w.action.as_deref()) {
            Some(notify) => notify,
            None => &event.action,
        }
    }

    /// Appends the notification of `event` to `out` (the event's payload shared where
    /// `out` allows it, [`super::wire::Wire`]).
    pub(crate) fn render(&self, event: &Stamped, out: &mut impl Out) {
        if let Some(w) = &self.wsn {
            let built = crate::protocol::wsn::outgoing(
                &w.sub,
                &w.terms,
                &event.action,
                &event.payload,
                &event.topics,
            );
            out.own(&built.envelope);
            return;
        }
        self.opening(event, out);
        self.rest(event, out);
    }

    /// Whether a notification is [`Template::opening`] then [`Template::rest`] (not a
    /// WS-BaseNotification one, which is built whole).
    pub(crate) fn splits(&self) -> bool {
        self.wsn.is_none()
    }

    /// Appends a notification's bytes up to its message id: the same for every event of
    /// the same [`Template::action`], so a sink may keep them.
    pub(crate) fn opening(&self, event: &Stamped, out: &mut impl Out) {
        out.own(self.head.as_bytes());
        if self.wrapped {
            out.own(crate::NOTIFY_EVENT_ACTION.as_bytes());
        } else {
            out.own(event.action_xml.as_bytes());
        }
        out.own(self.before_id.as_bytes());
    }

    /// Appends the rest of a notification after its [`Template::opening`]: written piece
    /// by piece into `out`, no buffer of the notification's own.
    pub(crate) fn rest(&self, event: &Stamped, out: &mut impl Out) {
        out.own(&uuid(&self.id_base, event.seq));
        out.own(self.before_stamp.as_bytes());
        let mut digits = itoa::Buffer::new();
        out.own(digits.format(event.seq).as_bytes());
        out.own(br#"" published=""#);
        out.own(digits.format(event.published_ns).as_bytes());
        out.own(br#""/>"#);
        out.own(event.headers_xml.as_bytes());
        out.own(b"</s:Header><s:Body>");
        if self.wrapped {
            out.own(NOTIFY_OPEN.as_bytes());
            out.own(lather_envelope::escape::escape_attribute(&event.action).as_bytes());
            out.own(b"\">");
            out.payload(&event.payload);
            out.own(NOTIFY_CLOSE.as_bytes());
        } else {
            out.payload(&event.payload);
        }
        out.own(TAIL.as_bytes());
    }
}

/// A version-4 UUID: `base` with its last eight bytes XORed with `seq`, so each
/// notification of a subscription has its own id without asking the system for randomness.
fn uuid(base: &[u8; 16], seq: u64) -> [u8; 36] {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut b = *base;
    for (byte, s) in b[8..].iter_mut().zip(seq.to_be_bytes()) {
        *byte ^= s;
    }
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    // Where each byte's two digits go (the dashes stay between the groups): constant
    // places, so the loop unrolls into plain stores.
    const AT: [usize; 16] = [0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34];
    let mut text = [b'-'; 36];
    for (x, at) in b.iter().zip(AT) {
        text[at] = HEX[usize::from(x >> 4)];
        text[at + 1] = HEX[usize::from(x & 15)];
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_ids_are_uuids_that_differ_per_notification() {
        let base = [0u8; 16];
        assert_eq!(&uuid(&base, 1), b"00000000-0000-4000-8000-000000000001");
        assert_eq!(
            &uuid(&base, 0x0102),
            b"00000000-0000-4000-8000-000000000102"
        );
        let random = [0xabu8; 16];
        assert_eq!(&uuid(&random, 0), b"abababab-abab-4bab-abab-abababababab");
    }
}
