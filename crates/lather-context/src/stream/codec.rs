//! Writing and reading the frames of one direction of a stream: each side keeps the
//! schemas it has sent (its [`Encoder`]) and those it has received (its [`Decoder`]), in
//! step because a stream's frames arrive in the order they were written.

use super::schema::{Schema, shape_hash};
use super::shape::{ShapeError, split};
use super::varint;
use super::{FrameKind, WireError};
use bytes::{BufMut, Bytes, BytesMut};
use std::collections::HashMap;

/// A message as it travels: HTTP headers that matter to SOAP (name in lower case, value)
/// and the document.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StreamMessage {
    /// `content-type`, `soapaction` and the like, in a fixed order per sender.
    pub headers: Vec<(String, Bytes)>,
    /// The SOAP envelope.
    pub body: Bytes,
}

/// Which frame a message goes in: a request, or the reply to one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameHead {
    /// A request, numbered by its sender.
    Request(u32),
    /// The reply to request `id`, with its HTTP status.
    Reply(u32, u16),
}

/// Bounds on what one direction of a stream may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CodecLimits {
    /// Most schemas a direction may define.
    pub max_schemas: usize,
    /// Most values (headers and slots) in one message.
    pub max_values: usize,
    /// Most bytes of one message's document once rebuilt.
    pub max_message_bytes: usize,
}

impl Default for CodecLimits {
    fn default() -> Self {
        CodecLimits {
            max_schemas: 64,
            max_values: 4096,
            max_message_bytes: 4 * 1024 * 1024,
        }
    }
}

/// Why a message was not put on the stream (it then goes as plain SOAP).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EncodeError {
    /// The document has no shape.
    #[error("the message has no shape: {0}")]
    Shape(#[from] ShapeError),
    /// A new shape, and the stream's schemas are all used.
    #[error("a new shape and all {0} schemas of the stream are used")]
    SchemasFull(usize),
    /// Larger than the stream takes.
    #[error("the message is larger than the stream's {0} bytes")]
    TooLarge(usize),
}

/// The writing side of one direction.
#[derive(Debug)]
pub struct Encoder {
    limits: CodecLimits,
    schemas: Vec<Schema>,
    by_hash: HashMap<u64, Vec<u32>>,
    payload: Vec<u8>,
    values: Vec<u8>,
}

impl Encoder {
    /// An encoder with no schemas yet.
    pub fn new(limits: CodecLimits) -> Self {
        Encoder {
            limits,
            schemas: Vec::new(),
            by_hash: HashMap::new(),
            payload: Vec::new(),
            values: Vec::new(),
        }
    }

    /// Schemas defined so far.
    pub fn schemas(&self) -> usize {
        self.schemas.len()
    }

    /// Appends `message` to `out` as a MESSAGE or REPLY frame, preceded by a SCHEMA frame
    /// when its shape is new. On an error nothing is written and nothing changes.
    pub fn encode(
        &mut self,
        out: &mut BytesMut,
        head: FrameHead,
        message: &StreamMessage,
    ) -> Result<(), EncodeError> {
        let body = &message.body[..];
        if body.len() > self.limits.max_message_bytes {
            return Err(EncodeError::TooLarge(self.limits.max_message_bytes));
        }
        let max_slots = self.limits.max_values.saturating_sub(message.headers.len());
        let shape = split(body, max_slots)?;
        let names: Vec<&str> = message.headers.iter().map(|(n, _)| n.as_str()).collect();
        let literals: Vec<&[u8]> = shape.literals.iter().map(|r| &body[r.clone()]).collect();
        let hash = shape_hash(&names, &literals);
        let known = self.by_hash.get(&hash).and_then(|ids| {
            ids.iter()
                .copied()
                .find(|&id| self.schemas[id as usize].is(&names, &literals))
        });
        let id = match known {
            Some(id) => id,
            None => {
                if self.schemas.len() >= self.limits.max_schemas {
                    return Err(EncodeError::SchemasFull(self.limits.max_schemas));
                }
                let id = self.schemas.len() as u32;
                let schema = Schema::new(
                    names.iter().map(|n| Box::from(*n)).collect(),
                    literals.iter().map(|l| Bytes::copy_from_slice(l)).collect(),
                );
                write_schema(&mut self.payload, id, &schema);
                frame(out, FrameKind::Schema, &self.payload);
                self.schemas.push(schema);
                self.by_hash.entry(hash).or_default().push(id);
                id
            }
        };
        let values = message
            .headers
            .iter()
            .map(|(_, v)| &v[..])
            .chain(shape.slots.iter().map(|r| &body[r.clone()]));
        self.payload.clear();
        let kind = match head {
            FrameHead::Request(request) => {
                varint::put(&mut self.payload, request.into());
                FrameKind::Message
            }
            FrameHead::Reply(request, status) => {
                varint::put(&mut self.payload, request.into());
                varint::put(&mut self.payload, status.into());
                FrameKind::Reply
            }
        };
        varint::put(&mut self.payload, id.into());
        let schema = &mut self.schemas[id as usize];
        write_values(&mut self.payload, &mut self.values, schema, values);
        frame(out, kind, &self.payload);
        Ok(())
    }
}

/// Writes the SCHEMA payload of `schema` into `payload` (cleared first).
fn write_schema(payload: &mut Vec<u8>, id: u32, schema: &Schema) {
    payload.clear();
    varint::put(payload, id.into());
    varint::put(payload, schema.headers.len() as u64);
    for name in &schema.headers {
        varint::put_string(payload, name.as_bytes());
    }
    varint::put(payload, schema.literals.len() as u64);
    for literal in &schema.literals {
        varint::put_string(payload, literal);
    }
}

/// A value's tag: the same as last time, written whole, or the last one's prefix and suffix
/// kept around new middle bytes.
const SAME: u8 = 0;
const WHOLE: u8 = 1;
const MIDDLE: u8 = 2;

/// Appends the tags and values of one message to `payload`, and keeps them as the
/// schema's last values.
fn write_values<'v>(
    payload: &mut Vec<u8>,
    scratch: &mut Vec<u8>,
    schema: &mut Schema,
    values: impl Iterator<Item = &'v [u8]>,
) {
    let n = schema.values();
    let tags_at = payload.len();
    payload.resize(tags_at + n.div_ceil(4), 0);
    scratch.clear();
    let mut ranges = Vec::with_capacity(n);
    for (i, value) in values.enumerate() {
        let tag = match schema.last_value(i) {
            Some(last) if last == value => SAME,
            Some(last) => {
                let (prefix, suffix) = common_ends(last, value);
                let middle = &value[prefix..value.len() - suffix];
                let as_middle = varint::size(prefix as u64)
                    + varint::size(suffix as u64)
                    + varint::size(middle.len() as u64)
                    + middle.len();
                if as_middle < varint::size(value.len() as u64) + value.len() {
                    varint::put(payload, prefix as u64);
                    varint::put(payload, suffix as u64);
                    varint::put_string(payload, middle);
                    MIDDLE
                } else {
                    varint::put_string(payload, value);
                    WHOLE
                }
            }
            None => {
                varint::put_string(payload, value);
                WHOLE
            }
        };
        payload[tags_at + i / 4] |= tag << ((i % 4) * 2);
        let start = scratch.len() as u32;
        scratch.extend_from_slice(value);
        ranges.push((start, scratch.len() as u32));
    }
    std::mem::swap(&mut schema.last_bytes, scratch);
    schema.last = ranges;
}

/// The longest common prefix of `last` and `value`, then the longest common suffix of what
/// is left of each.
pub(crate) fn common_ends(last: &[u8], value: &[u8]) -> (usize, usize) {
    let prefix = last.iter().zip(value).take_while(|(a, b)| a == b).count();
    let suffix = last[prefix..]
        .iter()
        .rev()
        .zip(value[prefix..].iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    (prefix, suffix)
}

/// Appends one frame: its kind, its payload's length, the payload.
pub(crate) fn frame(out: &mut BytesMut, kind: FrameKind, payload: &[u8]) {
    out.reserve(payload.len() + 6);
    out.put_u8(kind as u8);
    varint::put(out, payload.len() as u64);
    out.put_slice(payload);
}

/// A message read from the stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decoded {
    /// Request or reply, and its number.
    pub head: FrameHead,
    /// The message rebuilt.
    pub message: StreamMessage,
}

/// The reading side of one direction.
#[derive(Debug)]
pub struct Decoder {
    limits: CodecLimits,
    schemas: Vec<Schema>,
    weight: usize,
}

impl Decoder {
    /// A decoder with no schemas yet.
    pub fn new(limits: CodecLimits) -> Self {
        Decoder {
            limits,
            schemas: Vec::new(),
            weight: 0,
        }
    }

    /// Reads the payload of one SCHEMA, MESSAGE or REPLY frame: `None` for a schema, the
    /// message for the others. An error leaves the stream out of step: it must be closed.
    pub fn decode(
        &mut self,
        kind: FrameKind,
        mut payload: &[u8],
    ) -> Result<Option<Decoded>, WireError> {
        let input = &mut payload;
        match kind {
            FrameKind::Schema => {
                self.schema(input)?;
                Ok(None)
            }
            FrameKind::Message => {
                let id = varint::take(input)?;
                self.message(input, FrameHead::Request(id)).map(Some)
            }
            FrameKind::Reply => {
                let id = varint::take(input)?;
                let status = u16::try_from(varint::take(input)?)
                    .map_err(|_| WireError::Malformed("status over 16 bits"))?;
                self.message(input, FrameHead::Reply(id, status)).map(Some)
            }
            _ => Err(WireError::Malformed("not a message frame")),
        }
    }

    fn schema(&mut self, input: &mut &[u8]) -> Result<(), WireError> {
        let id = varint::take_len(input)?;
        if id != self.schemas.len() {
            return Err(WireError::Malformed("schema numbered out of order"));
        }
        if id >= self.limits.max_schemas {
            return Err(WireError::Limit("more schemas than the stream allows"));
        }
        let headers = varint::take_len(input)?;
        if headers > self.limits.max_values {
            return Err(WireError::Limit("more values than a message may have"));
        }
        let mut names = Vec::with_capacity(headers);
        for _ in 0..headers {
            let name = std::str::from_utf8(varint::take_string(input)?)
                .map_err(|_| WireError::Malformed("header name not UTF-8"))?;
            names.push(Box::from(name));
        }
        let count = varint::take_len(input)?;
        if count == 0 || headers + count - 1 > self.limits.max_values {
            return Err(WireError::Limit("more values than a message may have"));
        }
        let mut literals = Vec::with_capacity(count);
        for _ in 0..count {
            literals.push(Bytes::copy_from_slice(varint::take_string(input)?));
        }
        if !input.is_empty() {
            return Err(WireError::Malformed("bytes after a schema"));
        }
        let schema = Schema::new(names, literals);
        self.weight += schema.weight();
        if self.weight > self.limits.max_message_bytes.saturating_mul(2) {
            return Err(WireError::Limit("schemas larger than the stream allows"));
        }
        self.schemas.push(schema);
        Ok(())
    }

    fn message(&mut self, input: &mut &[u8], head: FrameHead) -> Result<Decoded, WireError> {
        let id = varint::take_len(input)?;
        let schema = self
            .schemas
            .get_mut(id)
            .ok_or(WireError::Malformed("a message of an undefined schema"))?;
        let n = schema.values();
        let tags = varint::take_bytes(input, n.div_ceil(4))?;
        let mut bytes = Vec::new();
        let mut ranges = Vec::with_capacity(n);
        for i in 0..n {
            let start = bytes.len();
            match (tags[i / 4] >> ((i % 4) * 2)) & 3 {
                SAME => bytes.extend_from_slice(
                    schema
                        .last_value(i)
                        .ok_or(WireError::Malformed("a repeated value with nothing before"))?,
                ),
                WHOLE => bytes.extend_from_slice(varint::take_string(input)?),
                MIDDLE => {
                    let last = schema
                        .last_value(i)
                        .ok_or(WireError::Malformed("a changed value with nothing before"))?;
                    let prefix = varint::take_len(input)?;
                    let suffix = varint::take_len(input)?;
                    let middle = varint::take_string(input)?;
                    if prefix.saturating_add(suffix) > last.len() {
                        return Err(WireError::Malformed("kept more than the last value had"));
                    }
                    bytes.extend_from_slice(&last[..prefix]);
                    bytes.extend_from_slice(middle);
                    bytes.extend_from_slice(&last[last.len() - suffix..]);
                }
                _ => return Err(WireError::Malformed("an unknown value tag")),
            }
            if bytes.len() > self.limits.max_message_bytes {
                return Err(WireError::Limit("a message larger than the stream allows"));
            }
            ranges.push((start as u32, bytes.len() as u32));
        }
        if !input.is_empty() {
            return Err(WireError::Malformed("bytes after a message's values"));
        }
        let headers_n = schema.headers.len();
        let headers = schema
            .headers
            .iter()
            .zip(&ranges)
            .map(|(name, &(s, e))| {
                (
                    name.to_string(),
                    Bytes::copy_from_slice(&bytes[s as usize..e as usize]),
                )
            })
            .collect();
        let size = schema.literals.iter().map(Bytes::len).sum::<usize>()
            + ranges[headers_n..]
                .iter()
                .map(|&(s, e)| (e - s) as usize)
                .sum::<usize>();
        if size > self.limits.max_message_bytes {
            return Err(WireError::Limit("a message larger than the stream allows"));
        }
        let mut body = BytesMut::with_capacity(size);
        body.put_slice(&schema.literals[0]);
        for (literal, &(s, e)) in schema.literals[1..].iter().zip(&ranges[headers_n..]) {
            body.put_slice(&bytes[s as usize..e as usize]);
            body.put_slice(literal);
        }
        schema.last = ranges;
        schema.last_bytes = bytes;
        Ok(Decoded {
            head,
            message: StreamMessage {
                headers,
                body: body.freeze(),
            },
        })
    }
}
