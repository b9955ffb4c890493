//! The request frame: what a handler on a worker needs to process one message.

use super::wire::{Reader, Writer};
use super::{FrameError, KIND_REQUEST, read_start, write_start};
use bytes::Bytes;
use lather_envelope::SoapVersion;
use lather_pipeline::Direction;

/// One call of a remote handler.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallRequest {
    /// The message's 128-bit id (the same on every attempt).
    pub id: u128,
    /// The configured handler name the worker runs.
    pub handler: String,
    /// 0 for the first attempt, 1 for the first retry, …
    pub attempt: u32,
    /// When the caller stops waiting, in milliseconds since the Unix epoch.
    pub deadline_unix_ms: u64,
    /// How often the caller wants to hear that the call is still in hand, in milliseconds:
    /// the worker acknowledges the request at once and sends a heartbeat every this often
    /// until it answers ([`super::Progress`]). 0: no acknowledgement and no heartbeats
    /// (oneway frames, nobody waits).
    pub heartbeat_ms: u32,
    /// A trace context to continue (e.g. a W3C `traceparent`), if any.
    pub trace: Option<String>,
    /// The service the message was sent to.
    pub service: String,
    /// The SOAP action, if any.
    pub action: Option<String>,
    /// The client's address, if known.
    pub client: Option<String>,
    /// The flow the message is in.
    pub direction: Direction,
    /// The envelope's SOAP version.
    pub soap: SoapVersion,
    /// The namespace declarations in scope for the Body's content, `(prefix, URI)`
    /// (the URI escaped for a double-quoted attribute).
    pub namespaces: Vec<(String, String)>,
    /// The parts of the message the handler reads.
    pub payload: Payload,
}

/// The message parts a request carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Payload {
    /// Some parts: header blocks standing alone (each carries the namespace declarations it
    /// needs) and the Body's content as it stands in the message, if the handler reads it.
    Parts {
        /// The header blocks, in document order.
        headers: Vec<Bytes>,
        /// The Body's content (between the Body tags), if shipped.
        body: Option<Bytes>,
    },
    /// The whole envelope as received, for handlers that read everything.
    Whole(Bytes),
}

const PAYLOAD_PARTS: u8 = 0;
const PAYLOAD_WHOLE: u8 = 1;

fn soap_byte(v: SoapVersion) -> u8 {
    match v {
        SoapVersion::V11 => 1,
        SoapVersion::V12 => 2,
    }
}

fn direction_byte(d: Direction) -> u8 {
    match d {
        Direction::Request => 0,
        Direction::Response => 1,
        Direction::Fault => 2,
    }
}

impl CallRequest {
    /// The frame's bytes. Fails only if a string is longer than 65 535 bytes, there are more
    /// than 65 535 namespaces or header blocks, or a part is 4 GiB or more.
    pub fn encode(&self) -> Result<Bytes, FrameError> {
        let payload_len = match &self.payload {
            Payload::Parts { headers, body } => {
                headers.iter().map(|h| h.len() + 4).sum::<usize>()
                    + body.as_ref().map_or(0, Bytes::len)
            }
            Payload::Whole(b) => b.len(),
        };
        let mut w = Writer::with_capacity(128 + payload_len);
        write_start(&mut w, KIND_REQUEST);
        w.u128(self.id);
        w.u32(self.attempt);
        w.u64(self.deadline_unix_ms);
        w.u32(self.heartbeat_ms);
        w.u8(soap_byte(self.soap));
        w.u8(direction_byte(self.direction));
        w.str16(&self.handler, "handler name")?;
        w.str16(&self.service, "service")?;
        w.opt_str16(self.action.as_deref(), "action")?;
        w.opt_str16(self.client.as_deref(), "client")?;
        w.opt_str16(self.trace.as_deref(), "trace context")?;
        w.count(self.namespaces.len(), "namespace list")?;
        for (prefix, uri) in &self.namespaces {
            w.str16(prefix, "namespace prefix")?;
            w.str16(uri, "namespace URI")?;
        }
        match &self.payload {
            Payload::Parts { headers, body } => {
                w.u8(PAYLOAD_PARTS);
                w.count(headers.len(), "header block list")?;
                for block in headers {
                    w.blob32(block, "header block")?;
                }
                match body {
                    None => w.u8(0),
                    Some(body) => {
                        w.u8(1);
                        w.blob32(body, "body")?;
                    }
                }
            }
            Payload::Whole(envelope) => {
                w.u8(PAYLOAD_WHOLE);
                w.blob32(envelope, "envelope")?;
            }
        }
        Ok(w.finish())
    }

    /// Reads a request frame; any other bytes are a [`FrameError`].
    pub fn decode(bytes: Bytes) -> Result<CallRequest, FrameError> {
        let mut r = Reader::new(bytes);
        read_start(&mut r, KIND_REQUEST)?;
        let id = r.u128("message id")?;
        let attempt = r.u32("attempt")?;
        let deadline_unix_ms = r.u64("deadline")?;
        let heartbeat_ms = r.u32("heartbeat interval")?;
        let soap = match r.u8("SOAP version")? {
            1 => SoapVersion::V11,
            2 => SoapVersion::V12,
            _ => return Err(FrameError::BadValue("SOAP version")),
        };
        let direction = match r.u8("direction")? {
            0 => Direction::Request,
            1 => Direction::Response,
            2 => Direction::Fault,
            _ => return Err(FrameError::BadValue("direction")),
        };
        let handler = r.str16("handler name")?;
        let service = r.str16("service")?;
        let action = r.opt_str16("action")?;
        let client = r.opt_str16("client")?;
        let trace = r.opt_str16("trace context")?;
        let n = r.count(4, "namespace list")?;
        let mut namespaces = Vec::with_capacity(n);
        for _ in 0..n {
            let prefix = r.str16("namespace prefix")?;
            let uri = r.str16("namespace URI")?;
            namespaces.push((prefix, uri));
        }
        let payload = match r.u8("payload kind")? {
            PAYLOAD_PARTS => {
                let n = r.count(4, "header block list")?;
                let mut headers = Vec::with_capacity(n);
                for _ in 0..n {
                    headers.push(r.blob32("header block")?);
                }
                let body = match r.u8("body flag")? {
                    0 => None,
                    1 => Some(r.blob32("body")?),
                    _ => return Err(FrameError::BadValue("body flag")),
                };
                Payload::Parts { headers, body }
            }
            PAYLOAD_WHOLE => Payload::Whole(r.blob32("envelope")?),
            _ => return Err(FrameError::BadValue("payload kind")),
        };
        r.end()?;
        Ok(CallRequest {
            id,
            handler,
            attempt,
            deadline_unix_ms,
            heartbeat_ms,
            trace,
            service,
            action,
            client,
            direction,
            soap,
            namespaces,
            payload,
        })
    }
}
