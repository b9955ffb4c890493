//! Frames on the wire: reading one from a connection, the connection's preface, and the
//! frames that carry no schema (RAW messages and ERRORs).

use super::codec::{Decoded, Envelope, StreamMessage, frame};
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

/// Reads the connecting side's preface; the token it names (at most 128 bytes).
pub async fn read_preface<R: AsyncRead + Unpin>(r: &mut R) -> Result<String, WireError> {
    let mut magic = [0u8; 5];
    r.read_exact(&mut magic).await?;
    if magic != MAGIC {
        return Err(WireError::Malformed(
            "not a lather stream (bad magic or version)",
        ));
    }
    let len = read_varint(r).await? as usize;
    if len > 128 {
        return Err(WireError::Limit("a token longer than 128 bytes"));
    }
    let mut token = vec![0u8; len];
    r.read_exact(&mut token).await?;
    String::from_utf8(token).map_err(|_| WireError::Malformed("token not UTF-8"))
}

/// Reads one frame's kind and payload; `None` at a clean end of the connection (between
/// frames). Payloads over `max_payload` bytes are refused before they are read.
pub async fn read_frame<R: AsyncRead + Unpin>(
    r: &mut R,
    max_payload: usize,
) -> Result<Option<(FrameKind, Bytes)>, WireError> {
    let mut kind = [0u8; 1];
    if r.read(&mut kind).await? == 0 {
        return Ok(None);
    }
    let kind = FrameKind::try_from(kind[0])?;
    let len = read_varint(r).await? as usize;
    if len > max_payload {
        return Err(WireError::Limit("a frame larger than the stream allows"));
    }
    let mut payload = vec![0u8; len];
    r.read_exact(&mut payload).await?;
    Ok(Some((kind, Bytes::from(payload))))
}

async fn read_varint<R: AsyncRead + Unpin>(r: &mut R) -> Result<u32, WireError> {
    let mut bytes = [0u8; 5];
    for i in 0..5 {
        bytes[i] = r.read_u8().await?;
        if bytes[i] & 0x80 == 0 {
            return varint::take(&mut &bytes[..=i]);
        }
    }
    Err(WireError::Malformed("integer over 32 bits"))
}

/// Appends a RAW frame: a message sent whole, with its headers, for one that has no shape
/// or no schema left.
pub fn write_raw(out: &mut BytesMut, envelope: Envelope, message: &StreamMessage) {
    let mut payload = Vec::with_capacity(message.body.len() + 64);
    let (id, status) = match envelope {
        Envelope::Request(id) => (id, 0),
        Envelope::Reply(id, status) => (id, status),
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
    let envelope = if reply {
        Envelope::Reply(id, status)
    } else {
        Envelope::Request(id)
    };
    Ok(Decoded {
        envelope,
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
