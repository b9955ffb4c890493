//! A subscription's notification envelope, built from parts made once per subscription
//! and parts made once per event: per notification the action, the second half of the
//! message id (formatted per notification, with the action in the Wrap format), the
//! event's stamp and headers (`Stamped::soap_stamp`, formatted once per event) and the
//! event itself are copied in. A 2011 subscription in the Wrap format gets the event
//! inside `wse:Notify@actionURI` ([`crate::protocol::format`]).

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
    /// From the end of the action to the second half of the message id's UUID (its first
    /// half, made from the first eight of the subscription's random bits, is the same for
    /// every notification).
    before_id: String,
    /// From the end of the message id to the stamp's `seq` value.
    before_stamp: String,
    /// The last eight of the subscription's random bits: XORed with the event's `seq`,
    /// the second half of each notification's message id.
    id_low: u64,
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
        let bits = id_bits(sub);
        // Joined at its exact length: kept for the subscription's life (`format!` leaves
        // room it guessed, up to twice the text).
        let before_id = [
            "</wsa:Action><wsa:To>",
            &escape_text(&sub.notify_to.address),
            "</wsa:To><wsa:MessageID>",
            &uuid_head(bits),
        ]
        .concat();
        let mut before_stamp = String::from("</wsa:MessageID>");
        for param in &sub.notify_to.params {
            if wsa == WSA10_NS {
                before_stamp.push_str(&mark_reference_parameter(param));
            } else {
                before_stamp.push_str(param);
            }
        }
        before_stamp.push_str(r#"<lev:EventStamp seq=""#);
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
            id_low: u128::from_be_bytes(bits) as u64,
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
        out.own(&uuid_tail(self.id_low, event.seq));
        out.own(self.before_stamp.as_bytes());
        out.own(event.soap_stamp.as_bytes());
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

/// The random bits a subscription's message ids are made from. Without system randomness,
/// bits from the subscription's id and the time through std's randomly keyed hasher, so
/// that two subscriptions' ids still differ.
fn id_bits(sub: &Subscription) -> [u8; 16] {
    let mut bits = [0u8; 16];
    if getrandom::fill(&mut bits).is_err() {
        use std::hash::{BuildHasher, Hasher};
        let keyed = std::collections::hash_map::RandomState::new();
        for (i, half) in bits.chunks_mut(8).enumerate() {
            let mut h = keyed.build_hasher();
            h.write(sub.id.as_bytes());
            h.write_u64(crate::protocol::event::unix_ns());
            h.write_usize(i);
            half.copy_from_slice(&h.finish().to_be_bytes());
        }
    }
    bits
}

/// A subscription's message ids are version-4 UUIDs (`urn:uuid:`): its random bits with
/// the last eight bytes XORed with the event's `seq`, so each notification of a
/// subscription has its own id without asking the system for randomness. This is their
/// first half, from the first eight bytes, the same for every notification:
/// `urn:uuid:xxxxxxxx-xxxx-4xxx-`.
fn uuid_head(bits: [u8; 16]) -> String {
    let mut urn = lather_envelope::uuid::urn_uuid_v4(bits);
    urn.truncate("urn:uuid:xxxxxxxx-xxxx-4xxx-".len());
    urn
}

/// The second half of a message id ([`uuid_head`]): `low` (the last eight random bytes)
/// XORed with `seq`, as `yyyy-yyyyyyyyyyyy` with the variant bits set.
fn uuid_tail(low: u64, seq: u64) -> [u8; 17] {
    let x = ((low ^ seq) & !(0xc0 << 56)) | (0x80 << 56);
    let hex = hex16(x);
    let mut text = [b'-'; 17];
    text[..4].copy_from_slice(&hex[..4]);
    text[5..].copy_from_slice(&hex[4..]);
    text
}

/// `x` as sixteen lowercase hexadecimal digits, most significant first: each nibble
/// spread to a byte, then turned into its digit for all sixteen at once.
fn hex16(x: u64) -> [u8; 16] {
    /// One nibble per byte of the result, the higher nibble of each input byte first.
    fn spread(x: u32) -> u64 {
        let x = u64::from(x);
        let x = (x | (x << 16)) & 0x0000_ffff_0000_ffff;
        let x = (x | (x << 8)) & 0x00ff_00ff_00ff_00ff;
        // Each input byte's high nibble lands in the higher byte of its pair.
        (x | (x << 4)) & 0x0f0f_0f0f_0f0f_0f0f
    }
    fn digits(nibbles: u64) -> u64 {
        // 0x06 added to a nibble carries into bit 4 exactly when it is 10 or more.
        let letters = ((nibbles + 0x0606_0606_0606_0606) >> 4) & 0x0101_0101_0101_0101;
        nibbles + 0x3030_3030_3030_3030 + letters * u64::from(b'a' - b'0' - 10)
    }
    let high = digits(spread((x >> 32) as u32)).to_be_bytes();
    let low = digits(spread(x as u32)).to_be_bytes();
    let mut out = [0u8; 16];
    out[..8].copy_from_slice(&high);
    out[8..].copy_from_slice(&low);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn uuid(bits: &[u8; 16], seq: u64) -> String {
        let low = u128::from_be_bytes(*bits) as u64;
        let head = uuid_head(*bits);
        let tail = uuid_tail(low, seq);
        head["urn:uuid:".len()..].to_owned() + std::str::from_utf8(&tail).unwrap()
    }

    #[test]
    fn message_ids_are_uuids_that_differ_per_notification() {
        let base = [0u8; 16];
        assert_eq!(uuid(&base, 1), "00000000-0000-4000-8000-000000000001");
        assert_eq!(uuid(&base, 0x0102), "00000000-0000-4000-8000-000000000102");
        let random = [0xabu8; 16];
        assert_eq!(uuid(&random, 0), "abababab-abab-4bab-abab-abababababab");
        let counting: [u8; 16] = std::array::from_fn(|i| (i * 17) as u8);
        assert_eq!(
            uuid(&counting, u64::MAX),
            "00112233-4455-4677-b766-554433221100"
        );
    }

    #[test]
    fn sixteen_hex_digits_of_every_nibble() {
        assert_eq!(&hex16(0x0123_4567_89ab_cdef), b"0123456789abcdef");
        assert_eq!(&hex16(0xfedc_ba98_7654_3210), b"fedcba9876543210");
        assert_eq!(&hex16(0), b"0000000000000000");
        for x in [1u64, 0x9a, 0xdead_beef, u64::MAX, 0x8000_0000_0000_0001] {
            assert_eq!(hex16(x).to_vec(), format!("{x:016x}").into_bytes());
        }
    }
}
