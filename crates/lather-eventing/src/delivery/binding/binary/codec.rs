//! The lather.bin frame codec: encode and decode notification and SubscriptionEnd frames
//! (layout in the parent module and `docs/eventing-binary.md`). No I/O.

use crate::protocol::compression::GunzipError;

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
pub enum BinaryMessage {
    /// A notification.
    Notification(Frame),
    /// The subscription ended.
    End(EndFrame),
}

/// Why bytes are not a frame (or a frame cannot be written).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BinaryFrameError {
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
    Gzip(GunzipError),
}

impl std::fmt::Display for BinaryFrameError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BinaryFrameError::BadMagic => write!(f, "not a lather binary frame (bad magic)"),
            BinaryFrameError::UnknownVersion(v) => {
                write!(f, "binary frame version {v} is not known")
            }
            BinaryFrameError::TooLong(n) => {
                write!(f, "binary frame body of {n} bytes exceeds {MAX_BODY}")
            }
            BinaryFrameError::Truncated => write!(f, "binary frame truncated inside its body"),
            BinaryFrameError::UnknownField(k) => {
                write!(f, "binary frame field kind {k} is not known")
            }
            BinaryFrameError::NotUtf8 => write!(f, "binary frame text is not UTF-8"),
            BinaryFrameError::FieldTooLong(what) => write!(f, "binary frame {what} is too long"),
            BinaryFrameError::UnknownFlags(b) => {
                write!(f, "binary frame flags {b:#04x} are not known")
            }
            BinaryFrameError::UnknownKind(k) => write!(f, "binary frame kind {k} is not known"),
            BinaryFrameError::NotANotification(k) => {
                write!(f, "binary frame of kind {k} is not a notification")
            }
            BinaryFrameError::Gzip(why) => write!(f, "compressed binary frame: {why}"),
        }
    }
}

impl std::error::Error for BinaryFrameError {}

/// Appends `frame` to `out`.
pub fn encode(frame: &Frame, out: &mut Vec<u8>) -> Result<(), BinaryFrameError> {
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
) -> Result<(), BinaryFrameError> {
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
pub(crate) fn write_head(
    out: &mut Vec<u8>,
    subscription: &str,
    seq: u64,
    published_ns: u64,
    action: &str,
    topic: &str,
    fields: &[(FieldKind, &str, &str)],
    payload_len: usize,
) -> Result<(), BinaryFrameError> {
    let sub_len = u8::try_from(subscription.len())
        .map_err(|_| BinaryFrameError::FieldTooLong("subscription id"))?;
    let count =
        u8::try_from(fields.len()).map_err(|_| BinaryFrameError::FieldTooLong("field list"))?;
    let short =
        |s: &str, what| u16::try_from(s.len()).map_err(|_| BinaryFrameError::FieldTooLong(what));
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
        return Err(BinaryFrameError::TooLong(body));
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
/// [`BinaryFrameError::NotANotification`] ([`decode_message`] reads both). Never panics,
/// whatever the bytes.
pub fn decode(buf: &[u8]) -> Result<Option<(Frame, usize)>, BinaryFrameError> {
    match decode_message(buf)? {
        None => Ok(None),
        Some((BinaryMessage::Notification(frame), used)) => Ok(Some((frame, used))),
        Some((BinaryMessage::End(_), _)) => {
            Err(BinaryFrameError::NotANotification(KIND_SUBSCRIPTION_END))
        }
    }
}

/// Reads the frame at the start of `buf`, a notification or a SubscriptionEnd, plain or
/// compressed: `Ok(None)` if more bytes are needed, else the message and how many bytes
/// the frame took. Never panics, whatever the bytes; inflates at most [`MAX_BODY`] bytes.
pub fn decode_message(buf: &[u8]) -> Result<Option<(BinaryMessage, usize)>, BinaryFrameError> {
    if buf.len() < PREFIX_LEN {
        if buf.iter().zip(MAGIC).any(|(a, b)| *a != b) {
            return Err(BinaryFrameError::BadMagic);
        }
        return Ok(None);
    }
    if buf[..2] != MAGIC {
        return Err(BinaryFrameError::BadMagic);
    }
    if buf[2] != VERSION {
        return Err(BinaryFrameError::UnknownVersion(buf[2]));
    }
    let flags = buf[3];
    if flags & !(FLAG_GZIP | FLAG_KIND) != 0 {
        return Err(BinaryFrameError::UnknownFlags(flags));
    }
    let body_len = u32::from_be_bytes([buf[4], buf[5], buf[6], buf[7]]) as usize;
    if body_len > MAX_BODY {
        return Err(BinaryFrameError::TooLong(body_len));
    }
    let Some(body) = buf.get(PREFIX_LEN..PREFIX_LEN + body_len) else {
        return Ok(None);
    };
    let inflated;
    let body = if flags & FLAG_GZIP != 0 {
        inflated =
            crate::protocol::compression::gunzip(body, MAX_BODY).map_err(BinaryFrameError::Gzip)?;
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
        KIND_NOTIFICATION => BinaryMessage::Notification(notification(r)?),
        KIND_SUBSCRIPTION_END => {
            let n = usize::from(r.u8()?);
            let subscription = r.text(n)?;
            let n = usize::from(r.u16()?);
            let status = r.text(n)?;
            let n = usize::from(r.u16()?);
            let reason = r.text(n)?;
            BinaryMessage::End(EndFrame {
                subscription,
                status,
                reason,
            })
        }
        other => return Err(BinaryFrameError::UnknownKind(other)),
    };
    Ok(Some((message, PREFIX_LEN + body_len)))
}

/// A notification's body from the sequence number on.
fn notification(mut r: Reader<'_>) -> Result<Frame, BinaryFrameError> {
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
        let kind = FieldKind::of(code).ok_or(BinaryFrameError::UnknownField(code))?;
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
pub fn encode_end(end: &EndFrame, out: &mut Vec<u8>) -> Result<(), BinaryFrameError> {
    let sub_len = u8::try_from(end.subscription.len())
        .map_err(|_| BinaryFrameError::FieldTooLong("subscription id"))?;
    let status_len =
        u16::try_from(end.status.len()).map_err(|_| BinaryFrameError::FieldTooLong("status"))?;
    let reason_len =
        u16::try_from(end.reason.len()).map_err(|_| BinaryFrameError::FieldTooLong("reason"))?;
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
    fn take(&mut self, n: usize) -> Result<&[u8], BinaryFrameError> {
        if n > self.0.len() {
            return Err(BinaryFrameError::Truncated);
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }
    fn u8(&mut self) -> Result<u8, BinaryFrameError> {
        Ok(self.take(1)?[0])
    }
    fn u16(&mut self) -> Result<u16, BinaryFrameError> {
        let b = self.take(2)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }
    fn u64(&mut self) -> Result<u64, BinaryFrameError> {
        let mut a = [0u8; 8];
        a.copy_from_slice(self.take(8)?);
        Ok(u64::from_be_bytes(a))
    }
    fn text(&mut self, n: usize) -> Result<String, BinaryFrameError> {
        String::from_utf8(self.take(n)?.to_vec()).map_err(|_| BinaryFrameError::NotUtf8)
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
        assert_eq!(decode(b"X").unwrap_err(), BinaryFrameError::BadMagic);
        assert_eq!(
            decode(&[b'L', b'B', 9, 0, 0, 0, 0, 0]).unwrap_err(),
            BinaryFrameError::UnknownVersion(9)
        );
        assert_eq!(
            decode(&[b'L', b'B', 1, 0, 0xff, 0, 0, 0]).unwrap_err(),
            BinaryFrameError::TooLong(0xff00_0000)
        );
        // A body whose subscription length runs past its end.
        let mut b = vec![b'L', b'B', 1, 0, 0, 0, 0, 17];
        b.extend_from_slice(&[0; 16]);
        b.push(5);
        assert_eq!(decode(&b).unwrap_err(), BinaryFrameError::Truncated);
        assert_eq!(
            decode(&[b'L', b'B', 1, 4, 0, 0, 0, 0]).unwrap_err(),
            BinaryFrameError::UnknownFlags(4)
        );
        assert_eq!(
            decode(&[b'L', b'B', 1, FLAG_KIND, 0, 0, 0, 1, 9]).unwrap_err(),
            BinaryFrameError::UnknownKind(9)
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
            Some((BinaryMessage::End(end), out.len()))
        );
        assert_eq!(
            decode(&out).unwrap_err(),
            BinaryFrameError::NotANotification(1)
        );
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
