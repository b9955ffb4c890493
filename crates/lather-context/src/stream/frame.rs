//! Frames on the wire: reading one from a connection, the connection's preface, and the
//! frames that carry no schema (RAW messages and ERRORs).

use super::codec::{Decoded, FrameHead, StreamMessage, frame};
use super::varint;
use super::{FrameKind, WireError};
use bytes::{BufMut, Bytes, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt};

/// The first bytes of a stream connection, both ways: `LSTR` and the format version.
pub const MAGIC: [u8; 5] = *b"LSTR\x01";

/// The preface the connecting side sends: the magic, then the stream's token.
pub fn preface(token: &str) -> BytesMut {
    let mut out = BytesMut::with_capacity(MAGIC.len() + 1 + token.len());
    out.put_slice(&MAGIC);
    varint::put(&mut out, token.len() as u64);
    out.put_slice(token.as_bytes());
    out
}

/// Reads frames from a connection into its own buffer, so that a read cut short (a
/// `select!` that takes another branch) loses nothing: [`FrameReader::next`] is
/// cancel-safe.
#[derive(Debug)]
pub struct FrameReader {
    buf: BytesMut,
    max_payload: usize,
}

impl FrameReader {
    /// A reader refusing payloads over `max_payload` bytes.
    pub fn new(max_payload: usize) -> Self {
        FrameReader {
            buf: BytesMut::with_capacity(8 * 1024),
            max_payload,
        }
    }

    /// Whether part of a frame has arrived and the rest has not.
    pub fn has_partial(&self) -> bool {
        !self.buf.is_empty()
    }

    /// The next frame's kind and payload; `None` at a clean end of the connection.
    pub async fn next<R: AsyncRead + Unpin>(
        &mut self,
        r: &mut R,
    ) -> Result<Option<(FrameKind, Bytes)>, WireError> {
        loop {
            if let Some(frame) = self.parse()? {
                return Ok(Some(frame));
            }
            if self.buf.capacity() - self.buf.len() < 4096 {
                self.buf.reserve(8 * 1024);
            }
            if r.read_buf(&mut self.buf).await? == 0 {
                return if self.buf.is_empty() {
                    Ok(None)
                } else {
                    Err(WireError::Malformed("the connection ended inside a frame"))
                };
            }
        }
    }

    /// The connecting side's preface, read through this reader's buffer: the token.
    pub async fn preface<R: AsyncRead + Unpin>(&mut self, r: &mut R) -> Result<String, WireError> {
        loop {
            if self.buf.len() >= MAGIC.len() {
                if self.buf[..MAGIC.len()] != MAGIC {
                    return Err(WireError::Malformed(
                        "not a lather stream (bad magic or version)",
                    ));
                }
                let mut rest = &self.buf[MAGIC.len()..];
                if let Some(len) = complete_varint(&mut rest)? {
                    if len > 128 {
                        return Err(WireError::Limit("a token longer than 128 bytes"));
                    }
                    if rest.len() >= len {
                        let token = String::from_utf8(rest[..len].to_vec())
                            .map_err(|_| WireError::Malformed("token not UTF-8"))?;
                        let used = self.buf.len() - rest.len() + len;
                        let _ = self.buf.split_to(used);
                        return Ok(token);
                    }
                }
            }
            if r.read_buf(&mut self.buf).await? == 0 {
                return Err(WireError::Malformed(
                    "the connection ended inside the preface",
                ));
            }
            if self.buf.len() > 256 {
                return Err(WireError::Malformed("a preface too long"));
            }
        }
    }

    fn parse(&mut self) -> Result<Option<(FrameKind, Bytes)>, WireError> {
        let Some(&kind) = self.buf.first() else {
            return Ok(None);
        };
        let kind = FrameKind::try_from(kind)?;
        let mut rest = &self.buf[1..];
        let Some(len) = complete_varint(&mut rest)? else {
            return Ok(None);
        };
        if len > self.max_payload {
            return Err(WireError::Limit("a frame larger than the stream allows"));
        }
        let head = self.buf.len() - rest.len();
        if self.buf.len() < head + len {
            self.buf.reserve(head + len - self.buf.len());
            return Ok(None);
        }
        let _ = self.buf.split_to(head);
        Ok(Some((kind, self.buf.split_to(len).freeze())))
    }
}

/// A varint from the front of `input` (advancing it), or `None` when its last byte has
/// not arrived yet.
fn complete_varint(input: &mut &[u8]) -> Result<Option<usize>, WireError> {
    let waiting = input.len() < 5 && input.iter().all(|b| b & 0x80 != 0);
    if waiting {
        return Ok(None);
    }
    varint::take_len(input).map(Some)
}

/// Appends a RAW frame: a message sent whole, with its headers, for one that has no shape
/// or no schema left.
pub fn write_raw(out: &mut BytesMut, head: FrameHead, message: &StreamMessage) {
    let mut payload = Vec::with_capacity(message.body.len() + 64);
    let (id, status) = match head {
        FrameHead::Request(id) => (id, 0),
        FrameHead::Reply(id, status) => (id, status),
    };
    varint::put(&mut payload, id.into());
    varint::put(&mut payload, status.into());
    varint::put(&mut payload, message.headers.len() as u64);
    for (name, value) in &message.headers {
        varint::put_string(&mut payload, name.as_bytes());
        varint::put_string(&mut payload, value);
    }
    varint::put_string(&mut payload, &message.body);
    frame(out, FrameKind::Raw, &payload);
}

/// Reads a RAW frame's payload; `reply` says which way it came (a reply carries a status).
pub fn read_raw(mut input: &[u8], reply: bool, max_headers: usize) -> Result<Decoded, WireError> {
    let input = &mut input;
    let id = varint::take(input)?;
    let status = u16::try_from(varint::take(input)?)
        .map_err(|_| WireError::Malformed("status over 16 bits"))?;
    let n = varint::take_len(input)?;
    if n > max_headers {
        return Err(WireError::Limit("more headers than a message may have"));
    }
    let mut headers = Vec::with_capacity(n);
    for _ in 0..n {
        let name = std::str::from_utf8(varint::take_string(input)?)
            .map_err(|_| WireError::Malformed("header name not UTF-8"))?;
        headers.push((
            name.to_owned(),
            Bytes::copy_from_slice(varint::take_string(input)?),
        ));
    }
    let body = Bytes::copy_from_slice(varint::take_string(input)?);
    if !input.is_empty() {
        return Err(WireError::Malformed("bytes after a raw message"));
    }
    let head = if reply {
        FrameHead::Reply(id, status)
    } else {
        FrameHead::Request(id)
    };
    Ok(Decoded {
        head,
        message: StreamMessage { headers, body },
    })
}

/// What an ERROR frame says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamFailure {
    /// The request it is about; 0 for the whole stream.
    pub request: u32,
    /// Why, in words.
    pub reason: String,
}

/// Appends an ERROR frame.
pub fn write_error(out: &mut BytesMut, request: u32, reason: &str) {
    let mut payload = Vec::with_capacity(reason.len() + 8);
    varint::put(&mut payload, request.into());
    varint::put_string(&mut payload, reason.as_bytes());
    frame(out, FrameKind::Error, &payload);
}

/// Reads an ERROR frame's payload.
pub fn read_error(mut input: &[u8]) -> Result<StreamFailure, WireError> {
    let input = &mut input;
    let request = varint::take(input)?;
    let reason = String::from_utf8_lossy(varint::take_string(input)?).into_owned();
    Ok(StreamFailure { request, reason })
}
