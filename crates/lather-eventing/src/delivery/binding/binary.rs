//! lather's binary notification frame (`lather.bin://`), self-delimiting so frames follow
//! each other on a TCP stream. Byte layout (all integers big-endian; `docs/eventing-binary.md`):
//!
//! ```text
//! offset size  field
//! 0      2     magic "LB" (0x4C 0x42)
//! 2      1     version (1)
//! 3      1     flags: bit 0 FLAG_GZIP (the body is gzip-compressed), bit 1 FLAG_KIND
//!              (the body starts with a kind byte); other bits 0
//! 4      4     body length N: bytes after this field (at most MAX_BODY)
//! 8      8     event sequence number
//! 16     8     publish time, Unix nanoseconds
//! 24     1+n   subscription id: length (u8), UTF-8
//! …      2+n   action: length (u16), UTF-8
//! …      2+n   topic: length (u16), UTF-8 (empty if none)
//! …      1     field count (u8), then per field:
//!              kind (u8: 0 reference parameter, 1 event header, 2 reference parameter as XML),
//!              name: length (u16) + UTF-8 (`{namespace}local`; empty for kind 2),
//!              value: length (u16) + UTF-8 (text content; the element for kind 2)
//! …      rest  event payload (the event element's bytes)
//! ```
//!
//! A frame with `FLAG_KIND` starts its body with a kind byte: 0 a notification (the layout
//! above from offset 8 on), 1 a SubscriptionEnd ([`EndFrame`]: subscription id as above,
//! then status and reason, each a u16 length and UTF-8). Frames without it are
//! notifications, byte for byte as before either flag existed. With `FLAG_GZIP` the N body
//! bytes are the gzip (RFC 1952) of the body as described; decoders inflate at most
//! [`MAX_BODY`] bytes of it.

use crate::Subscription;
use crate::delivery::stamped::Stamped;
use lather_envelope::{Element, Limits};

/// The frame's first two bytes.
pub const MAGIC: [u8; 2] = *b"LB";
/// The layout version this crate writes and reads.
pub const VERSION: u8 = 1;
/// Bytes before the body: magic, version, flags, body length.
pub const PREFIX_LEN: usize = 8;
/// Largest body accepted (16 MiB), compressed or inflated.
pub const MAX_BODY: usize = 16 * 1024 * 1024;
/// Flag bit: the body is gzip-compressed.
pub const FLAG_GZIP: u8 = 0x01;
/// Flag bit: the body starts with a frame kind byte.
pub const FLAG_KIND: u8 = 0x02;
/// The kind byte of a notification frame (the only kind without [`FLAG_KIND`]).
pub const KIND_NOTIFICATION: u8 = 0;
/// The kind byte of a SubscriptionEnd frame.
pub const KIND_SUBSCRIPTION_END: u8 = 1;

/// What a field carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldKind {
    /// A NotifyTo reference parameter with simple content: Clark name and text.
    ReferenceParameter,
    /// A header the event was published with: Clark name and text.
    Header,
    /// A reference parameter with element content, as its XML (name empty).
    ReferenceParameterXml,
}

impl FieldKind {
    fn code(self) -> u8 {
        match self {
            FieldKind::ReferenceParameter => 0,
            FieldKind::Header => 1,
            FieldKind::ReferenceParameterXml => 2,
        }
    }

    fn of(code: u8) -> Option<FieldKind> {
        match code {
            0 => Some(FieldKind::ReferenceParameter),
            1 => Some(FieldKind::Header),
            2 => Some(FieldKind::ReferenceParameterXml),
            _ => None,
        }
    }
}

/// One name/value field of a frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    /// What it carries.
    pub kind: FieldKind,
    /// `{namespace}local` (empty for [`FieldKind::ReferenceParameterXml`]).
    pub name: String,
    /// Text content (or the element's XML).
    pub value: String,
}

/// A decoded frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    /// The subscription identifier (`urn:uuid:…`), at most 255 bytes.
    pub subscription: String,
    /// The event's sequence number.
    pub seq: u64,
    /// When the event was published, Unix nanoseconds.
    pub published_ns: u64,
    /// The notification's action, at most 65 535 bytes.
    pub action: String,
    /// The event's (first) topic, or empty.
    pub topic: String,
    /// Reference parameters and event headers, at most 255.
    pub fields: Vec<Field>,
    /// The event element's bytes.
    pub payload: Vec<u8>,
}

/// A decoded SubscriptionEnd frame: the source ended the subscription.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndFrame {
    /// The subscription identifier (`urn:uuid:…`), at most 255 bytes.
    pub subscription: String,
    /// The WS-Eventing `Status` URI, e.g. `http://www.w3.org/2011/03/ws-evt/SourceShuttingDown`.
    pub status: String,
    /// Why, in English (the SubscriptionEnd's `Reason`).
    pub reason: String,
}

/// A decoded frame of either kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Message {
    /// A notification.
    Notification(Frame),
    /// The subscription ended.
    End(EndFrame),
}

/// Why bytes are not a frame (or a frame cannot be written).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FrameError {
    /// The first bytes are not `LB`.
    BadMagic,
    /// A version this decoder does not read.
    UnknownVersion(u8),
    /// The body length is beyond [`MAX_BODY`].
    TooLong(usize),
    /// A length inside the body runs past its end.
    Truncated,
    /// A field kind this decoder does not know.
    UnknownField(u8),
    /// A text that is not UTF-8.
    NotUtf8,
    /// A value too long for its length field.
    FieldTooLong(&'static str),
    /// Flag bits this decoder does not know.
    UnknownFlags(u8),
    /// A frame kind this decoder does not know.
    UnknownKind(u8),
    /// A frame of another kind where a notification was expected ([`decode`]).
    NotANotification(u8),
    /// A compressed body that is not gzip or inflates beyond [`MAX_BODY`].
    Gzip(String),
}

impl std::fmt::Display for FrameError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FrameError::BadMagic => write!(f, "not a lather binary frame (bad magic)"),
            FrameError::UnknownVersion(v) => write!(f, "binary frame version {v} is not known"),
            FrameError::TooLong(n) => {
                write!(f, "binary frame body of {n} bytes exceeds {MAX_BODY}")
            }
            FrameError::Truncated => write!(f, "binary frame truncated inside its body"),
            FrameError::UnknownField(k) => write!(f, "binary frame field kind {k} is not known"),
            FrameError::NotUtf8 => write!(f, "binary frame text is not UTF-8"),
            FrameError::FieldTooLong(what) => write!(f, "binary frame {what} is too long"),
            FrameError::UnknownFlags(b) => write!(f, "binary frame flags {b:#04x} are not known"),
            FrameError::UnknownKind(k) => write!(f, "binary frame kind {k} is not known"),
            FrameError::NotANotification(k) => {
                write!(f, "binary frame of kind {k} is not a notification")
            }
            FrameError::Gzip(why) => write!(f, "compressed binary frame: {why}"),
        }
    }
}

impl std::error::Error for FrameError {}

/// Appends `frame` to `out`.
pub fn encode(frame: &Frame, out: &mut Vec<u8>) -> Result<(), FrameError> {
    let fields: Vec<(FieldKind, &str, &str)> = frame
        .fields
        .iter()
        .map(|f| (f.kind, f.name.as_str(), f.value.as_str()))
        .collect();
    write(
        out,
        &frame.subscription,
        frame.seq,
        frame.published_ns,
        &frame.action,
        &frame.topic,
        &fields,
        &frame.payload,
    )
}

/// Writes one frame from its parts; on error `out` is left as it was.
#[allow(clippy::too_many_arguments)]
fn write(
    out: &mut Vec<u8>,
    subscription: &str,
    seq: u64,
    published_ns: u64,
    action: &str,
    topic: &str,
    fields: &[(FieldKind, &str, &str)],
    payload: &[u8],
) -> Result<(), FrameError> {
    write_head(
        out,
        subscription,
        seq,
        published_ns,
        action,
        topic,
        fields,
        payload.len(),
    )?;
    out.extend_from_slice(payload);
    Ok(())
}

/// Writes one frame's head (everything before the payload) for a payload of
/// `payload_len` bytes; on error `out` is left as it was.
#[allow(clippy::too_many_arguments)]
fn write_head(
    out: &mut Vec<u8>,
    subscription: &str,
    seq: u64,
    published_ns: u64,
    action: &str,
    topic: &str,
    fields: &[(FieldKind, &str, &str)],
    payload_len: usize,
) -> Result<(), FrameError> {
    let sub_len = u8::try_from(subscription.len())
        .map_err(|_| FrameError::FieldTooLong("subscription id"))?;
    let count = u8::try_from(fields.len()).map_err(|_| FrameError::FieldTooLong("field list"))?;
    let short = |s: &str, what| u16::try_from(s.len()).map_err(|_| FrameError::FieldTooLong(what));
    let action_len = short(action, "action")?;
    let topic_len = short(topic, "topic")?;
    let mut fields_len = 0usize;
    for (_, name, value) in fields {
        short(name, "field name")?;
        short(value, "field value")?;
        fields_len += 5 + name.len() + value.len();
    }
    let body = 16
        + 1
        + subscription.len()
        + 2
        + action.len()
        + 2
        + topic.len()
        + 1
        + fields_len
        + payload_len;
    if body > MAX_BODY {
        return Err(FrameError::TooLong(body));
    }
    out.reserve(PREFIX_LEN + body - payload_len);
    out.extend_from_slice(&MAGIC);
    out.push(VERSION);
    out.push(0);
    // body ≤ MAX_BODY < u32::MAX
    out.extend_from_slice(&(body as u32).to_be_bytes());
    out.extend_from_slice(&seq.to_be_bytes());
    out.extend_from_slice(&published_ns.to_be_bytes());
    out.push(sub_len);
    out.extend_from_slice(subscription.as_bytes());
    out.extend_from_slice(&action_len.to_be_bytes());
    out.extend_from_slice(action.as_bytes());
    out.extend_from_slice(&topic_len.to_be_bytes());
    out.extend_from_slice(topic.as_bytes());
    out.push(count);
    for (kind, name, value) in fields {
        out.push(kind.code());
        out.extend_from_slice(&(name.len() as u16).to_be_bytes());
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(&(value.len() as u16).to_be_bytes());
        out.extend_from_slice(value.as_bytes());
    }
    Ok(())
}

/// Reads the notification frame at the start of `buf`: `Ok(None)` if more bytes are
/// needed, else the frame and how many bytes it took; a SubscriptionEnd frame is
/// [`FrameError::NotANotification`] ([`decode_message`] reads both). Never panics,
/// whatever the bytes.
pub fn decode(buf: &[u8]) -> Result<Option<(Frame, usize)>, FrameError> {
    match decode_message(buf)? {
        None => Ok(None),
        Some((Message::Notification(frame), used)) => Ok(Some((frame, used))),
        Some((Message::End(_), _)) => Err(FrameError::NotANotification(KIND_SUBSCRIPTION_END)),
    }
}

/// Reads the frame at the start of `buf`, a notification or a SubscriptionEnd, plain or
/// compressed: `Ok(None)` if more bytes are needed, else the message and how many bytes
/// the frame took. Never panics, whatever the bytes; inflates at most [`MAX_BODY`] bytes.
pub fn decode_message(buf: &[u8]) -> Result<Option<(Message, usize)>, FrameError> {
    if buf.len() < PREFIX_LEN {
        if buf.iter().zip(MAGIC).any(|(a, b)| *a != b) {
            return Err(FrameError::BadMagic);
        }
        return Ok(None);
    }
    if buf[..2] != MAGIC {
        return Err(FrameError::BadMagic);
    }
    if buf[2] != VERSION {
        return Err(FrameError::UnknownVersion(buf[2]));
    }
    let flags = buf[3];
    if flags & !(FLAG_GZIP | FLAG_KIND) != 0 {
        return Err(FrameError::UnknownFlags(flags));
    }
    let body_len = u32::from_be_bytes([buf[4], buf[5], buf[6], buf[7]]) as usize;
    if body_len > MAX_BODY {
        return Err(FrameError::TooLong(body_len));
    }
    let Some(body) = buf.get(PREFIX_LEN..PREFIX_LEN + body_len) else {
        return Ok(None);
    };
    let inflated;
    let body = if flags & FLAG_GZIP != 0 {
        inflated =
            crate::protocol::compression::gunzip(body, MAX_BODY).map_err(FrameError::Gzip)?;
        &inflated[..]
    } else {
        body
    };
    let mut r = Reader(body);
    let kind = if flags & FLAG_KIND != 0 {
        r.u8()?
    } else {
        KIND_NOTIFICATION
    };
    let message = match kind {
        KIND_NOTIFICATION => Message::Notification(notification(r)?),
        KIND_SUBSCRIPTION_END => {
            let n = usize::from(r.u8()?);
            let subscription = r.text(n)?;
            let n = usize::from(r.u16()?);
            let status = r.text(n)?;
            let n = usize::from(r.u16()?);
            let reason = r.text(n)?;
            Message::End(EndFrame {
                subscription,
                status,
                reason,
            })
        }
        other => return Err(FrameError::UnknownKind(other)),
    };
    Ok(Some((message, PREFIX_LEN + body_len)))
}

/// A notification's body from the sequence number on.
fn notification(mut r: Reader<'_>) -> Result<Frame, FrameError> {
    let seq = r.u64()?;
    let published_ns = r.u64()?;
    let n = usize::from(r.u8()?);
    let subscription = r.text(n)?;
    let n = usize::from(r.u16()?);
    let action = r.text(n)?;
    let n = usize::from(r.u16()?);
    let topic = r.text(n)?;
    let count = r.u8()?;
    let mut fields = Vec::with_capacity(usize::from(count));
    for _ in 0..count {
        let code = r.u8()?;
        let kind = FieldKind::of(code).ok_or(FrameError::UnknownField(code))?;
        let n = usize::from(r.u16()?);
        let name = r.text(n)?;
        let n = usize::from(r.u16()?);
        let value = r.text(n)?;
        fields.push(Field { kind, name, value });
    }
    Ok(Frame {
        subscription,
        seq,
        published_ns,
        action,
        topic,
        fields,
        payload: r.0.to_vec(),
    })
}

/// Appends the SubscriptionEnd frame `end` to `out` (never compressed); on error `out` is
/// left as it was.
pub fn encode_end(end: &EndFrame, out: &mut Vec<u8>) -> Result<(), FrameError> {
    let sub_len = u8::try_from(end.subscription.len())
        .map_err(|_| FrameError::FieldTooLong("subscription id"))?;
    let status_len =
        u16::try_from(end.status.len()).map_err(|_| FrameError::FieldTooLong("status"))?;
    let reason_len =
        u16::try_from(end.reason.len()).map_err(|_| FrameError::FieldTooLong("reason"))?;
    let body = 1 + 1 + end.subscription.len() + 2 + end.status.len() + 2 + end.reason.len();
    out.reserve(PREFIX_LEN + body);
    out.extend_from_slice(&MAGIC);
    out.push(VERSION);
    out.push(FLAG_KIND);
    // body < 2 + 255 + 2 × (2 + 65 535)
    out.extend_from_slice(&(body as u32).to_be_bytes());
    out.push(KIND_SUBSCRIPTION_END);
    out.push(sub_len);
    out.extend_from_slice(end.subscription.as_bytes());
    out.extend_from_slice(&status_len.to_be_bytes());
    out.extend_from_slice(end.status.as_bytes());
    out.extend_from_slice(&reason_len.to_be_bytes());
    out.extend_from_slice(end.reason.as_bytes());
    Ok(())
}

/// Compresses the body of the frame that starts at `buf[at]` (the last in `buf`) in place
/// if it has at least `min_bytes`, setting [`FLAG_GZIP`] and the compressed length.
pub(crate) fn compress_in_place(buf: &mut Vec<u8>, at: usize, min_bytes: usize) {
    let start = at + PREFIX_LEN;
    let Some(packed) = buf
        .get(start..)
        .and_then(|body| crate::protocol::compression::gzip(body, min_bytes))
        .filter(|p| p.len() <= MAX_BODY)
    else {
        return;
    };
    buf.truncate(start);
    buf.extend_from_slice(&packed);
    buf[at + 3] |= FLAG_GZIP;
    // ≤ MAX_BODY < u32::MAX
    buf[at + 4..start].copy_from_slice(&(packed.len() as u32).to_be_bytes());
}

/// A cursor over a frame body.
struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], FrameError> {
        if n > self.0.len() {
            return Err(FrameError::Truncated);
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }
    fn u8(&mut self) -> Result<u8, FrameError> {
        Ok(self.take(1)?[0])
    }
    fn u16(&mut self) -> Result<u16, FrameError> {
        let b = self.take(2)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }
    fn u64(&mut self) -> Result<u64, FrameError> {
        let mut a = [0u8; 8];
        a.copy_from_slice(self.take(8)?);
        Ok(u64::from_be_bytes(a))
    }
    fn text(&mut self, n: usize) -> Result<String, FrameError> {
        String::from_utf8(self.take(n)?.to_vec()).map_err(|_| FrameError::NotUtf8)
    }
}

/// The per-subscription part of a subscription's frames: its id and its reference
/// parameters in compact form, made once.
#[derive(Debug, Clone)]
pub(crate) struct SubscriptionPart {
    id: String,
    params: Vec<(FieldKind, String, String)>,
}

impl SubscriptionPart {
    pub(crate) fn new(sub: &Subscription) -> SubscriptionPart {
        let limits = Limits {
            max_message_bytes: usize::MAX,
            max_depth: 64,
            max_attributes: 64,
        };
        let params = sub
            .notify_to
            .params
            .iter()
            .map(|xml| match Element::parse(xml.as_bytes(), &limits) {
                Ok(e) if e.elements().next().is_none() => (
                    FieldKind::ReferenceParameter,
                    format!("{{{}}}{}", e.name().namespace(), e.name().local()),
                    e.text().to_string(),
                ),
                _ => (FieldKind::ReferenceParameterXml, String::new(), xml.clone()),
            })
            .collect();
        SubscriptionPart {
            id: sub.id.clone(),
            params,
        }
    }

    /// Appends `event`'s frame to `out` (the event's payload shared where `out` allows
    /// it, [`super::wire::Wire`]).
    pub(crate) fn render(
        &self,
        event: &Stamped,
        out: &mut impl super::wire::Out,
    ) -> Result<(), FrameError> {
        let mut fields: Vec<(FieldKind, &str, &str)> = self
            .params
            .iter()
            .map(|(k, n, v)| (*k, n.as_str(), v.as_str()))
            .collect();
        let names: Vec<String> = event.headers.iter().map(|h| h.clark()).collect();
        for (h, name) in event.headers.iter().zip(&names) {
            fields.push((FieldKind::Header, name, &h.text));
        }
        let mut head = Vec::new();
        write_head(
            &mut head,
            &self.id,
            event.seq,
            event.published_ns,
            &event.action,
            event.topics.first().map_or("", String::as_str),
            &fields,
            event.payload.len(),
        )?;
        out.own(&head);
        out.payload(&event.payload);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hand-written bytes of a small frame, checked field by field against the layout.
    #[test]
    fn the_layout_is_as_documented() {
        let frame = Frame {
            subscription: "s".into(),
            seq: 2,
            published_ns: 3,
            action: "a".into(),
            topic: String::new(),
            fields: vec![Field {
                kind: FieldKind::Header,
                name: "n".into(),
                value: "v".into(),
            }],
            payload: b"<e/>".to_vec(),
        };
        let mut out = Vec::new();
        encode(&frame, &mut out).unwrap();
        let mut want = vec![b'L', b'B', 1, 0, 0, 0, 0, 35];
        want.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 2]);
        want.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 3]);
        want.extend_from_slice(&[1, b's', 0, 1, b'a', 0, 0, 1]);
        want.extend_from_slice(&[1, 0, 1, b'n', 0, 1, b'v']);
        want.extend_from_slice(b"<e/>");
        assert_eq!(out, want);
        assert_eq!(decode(&out).unwrap(), Some((frame, out.len())));
        assert_eq!(decode(&out[..out.len() - 1]).unwrap(), None);
    }

    #[test]
    fn bad_prefixes_are_errors_not_waits() {
        assert_eq!(decode(b"X").unwrap_err(), FrameError::BadMagic);
        assert_eq!(
            decode(&[b'L', b'B', 9, 0, 0, 0, 0, 0]).unwrap_err(),
            FrameError::UnknownVersion(9)
        );
        assert_eq!(
            decode(&[b'L', b'B', 1, 0, 0xff, 0, 0, 0]).unwrap_err(),
            FrameError::TooLong(0xff00_0000)
        );
        // A body whose subscription length runs past its end.
        let mut b = vec![b'L', b'B', 1, 0, 0, 0, 0, 17];
        b.extend_from_slice(&[0; 16]);
        b.push(5);
        assert_eq!(decode(&b).unwrap_err(), FrameError::Truncated);
        assert_eq!(
            decode(&[b'L', b'B', 1, 4, 0, 0, 0, 0]).unwrap_err(),
            FrameError::UnknownFlags(4)
        );
        assert_eq!(
            decode(&[b'L', b'B', 1, FLAG_KIND, 0, 0, 0, 1, 9]).unwrap_err(),
            FrameError::UnknownKind(9)
        );
    }

    #[test]
    fn end_frames_and_compressed_frames_decode() {
        let end = EndFrame {
            subscription: "s".into(),
            status: "st".into(),
            reason: "r".into(),
        };
        let mut out = Vec::new();
        encode_end(&end, &mut out).unwrap();
        let want = [
            b'L', b'B', 1, 2, 0, 0, 0, 10, 1, 1, b's', 0, 2, b's', b't', 0, 1, b'r',
        ];
        assert_eq!(out, want);
        assert_eq!(
            decode_message(&out).unwrap(),
            Some((Message::End(end), out.len()))
        );
        assert_eq!(decode(&out).unwrap_err(), FrameError::NotANotification(1));
        let frame = Frame {
            subscription: "s".into(),
            seq: 1,
            published_ns: 2,
            action: "a".into(),
            topic: String::new(),
            fields: Vec::new(),
            payload: b"<e>".repeat(500),
        };
        let mut plain = Vec::new();
        encode(&frame, &mut plain).unwrap();
        let mut packed = plain.clone();
        compress_in_place(&mut packed, 0, plain.len() + 1);
        assert_eq!(packed, plain, "below the threshold the frame stays plain");
        compress_in_place(&mut packed, 0, 100);
        assert_eq!(packed[3], FLAG_GZIP);
        assert!(packed.len() < plain.len() / 4);
        assert_eq!(decode(&packed).unwrap(), Some((frame, packed.len())));
    }
}
