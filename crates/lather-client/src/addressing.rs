//! WS-Addressing on requests: the version spoken, fresh message ids, the header blocks.

use bytes::Bytes;
use lather_envelope::escape::{escape_attribute, escape_text};
use lather_envelope::{Envelope, QName, WSA04_NS, WSA10_NS};
use std::sync::atomic::{AtomicU64, Ordering};

/// The WS-Addressing version a request speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Wsa {
    /// WS-Addressing 1.0 (W3C, 2005/08): `http://www.w3.org/2005/08/addressing`.
    V10,
    /// The 2004/08 member submission: `http://schemas.xmlsoap.org/ws/2004/08/addressing`.
    Submission04,
}

impl Wsa {
    /// The version's namespace.
    pub fn namespace(self) -> &'static str {
        match self {
            Wsa::V10 => WSA10_NS,
            Wsa::Submission04 => WSA04_NS,
        }
    }

    /// The version's anonymous address ("reply on the HTTP response").
    pub fn anonymous(self) -> &'static str {
        match self {
            Wsa::V10 => "http://www.w3.org/2005/08/addressing/anonymous",
            Wsa::Submission04 => "http://schemas.xmlsoap.org/ws/2004/08/addressing/role/anonymous",
        }
    }

    /// The text of the first `wsa:RelatesTo` header block of `envelope` in this version:
    /// the MessageID of the request an answer replies to.
    pub fn relates_to(self, envelope: &Envelope) -> Option<String> {
        let block = envelope.header(&QName::new(self.namespace(), "RelatesTo"))?;
        envelope.header_text(block).map(|t| t.trim().to_owned())
    }
}

/// The addressing a request carries: its version, MessageID and ReplyTo.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Addressing<'a> {
    pub(crate) wsa: Wsa,
    pub(crate) message_id: &'a str,
    pub(crate) reply_to: Option<&'a str>,
}

impl Addressing<'_> {
    /// The header blocks: MessageID, To, Action and ReplyTo — given, or for 2004/08 (where
    /// a reply needs one) the anonymous address.
    pub(crate) fn header_blocks(&self, to: &str, action: &str) -> Vec<Bytes> {
        let ns = self.wsa.namespace();
        let text = |local: &str, value: &str| {
            Bytes::from(format!(
                r#"<wsa:{local} xmlns:wsa="{}">{}</wsa:{local}>"#,
                escape_attribute(ns),
                escape_text(value)
            ))
        };
        let mut blocks = vec![
            text("MessageID", self.message_id),
            text("To", to),
            text("Action", action),
        ];
        let reply_to = match (self.reply_to, self.wsa) {
            (Some(address), _) => Some(address),
            (None, Wsa::Submission04) => Some(self.wsa.anonymous()),
            (None, Wsa::V10) => None,
        };
        if let Some(address) = reply_to {
            blocks.push(Bytes::from(format!(
                r#"<wsa:ReplyTo xmlns:wsa="{}"><wsa:Address>{}</wsa:Address></wsa:ReplyTo>"#,
                escape_attribute(ns),
                escape_text(address)
            )));
        }
        blocks
    }
}

/// A fresh `urn:uuid:` (version 4). Should the system's randomness fail, the clock and a
/// process counter still make it unique within the process.
pub(crate) fn fresh_message_id() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut bytes = [0u8; 16];
    if getrandom::fill(&mut bytes).is_err() {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        bytes[..8].copy_from_slice(&(nanos as u64).to_be_bytes());
        bytes[8..].copy_from_slice(&COUNTER.fetch_add(1, Ordering::Relaxed).to_be_bytes());
    }
    lather_envelope::uuid::urn_uuid_v4(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_ids_are_fresh_uuid_urns() {
        let a = fresh_message_id();
        let b = fresh_message_id();
        assert!(a.starts_with("urn:uuid:") && a.len() == 45, "{a}");
        assert_ne!(a, b);
    }

    #[test]
    fn submission_gets_an_anonymous_reply_to_and_1_0_none_unless_given() {
        let mut a = Addressing {
            wsa: Wsa::Submission04,
            message_id: "urn:uuid:1",
            reply_to: None,
        };
        let blocks = a.header_blocks("http://h/x", "urn:a&b");
        assert_eq!(blocks.len(), 4);
        let text = |b: &Bytes| std::str::from_utf8(b).unwrap().to_owned();
        assert!(text(&blocks[0]).contains(">urn:uuid:1</wsa:MessageID>"));
        assert!(text(&blocks[1]).contains(">http://h/x</wsa:To>"));
        assert!(text(&blocks[2]).contains(">urn:a&amp;b</wsa:Action>"));
        assert!(text(&blocks[3]).contains("/2004/08/addressing/role/anonymous<"));
        a.wsa = Wsa::V10;
        assert_eq!(a.header_blocks("http://h/x", "urn:a").len(), 3);
        a.reply_to = Some("http://me/replies");
        let blocks = a.header_blocks("http://h/x", "urn:a");
        assert!(text(&blocks[3]).contains(
            r#"xmlns:wsa="http://www.w3.org/2005/08/addressing"><wsa:Address>http://me/replies<"#
        ));
    }
}
