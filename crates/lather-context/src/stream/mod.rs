//! Negotiated message streams: two lather endpoints agree, in an ordinary SOAP exchange,
//! to carry an operation's messages over one persistent connection in a compact form —
//! each message shape is sent once as a *schema* (its HTTP header names and the literal
//! markup of its document) and each message after that carries only its values, each one
//! either unchanged from the last message of that shape, whole, or the last one's ends
//! around new middle bytes. The far side rebuilds every message byte for byte and hands
//! it to its handlers as any other SOAP message.
//!
//! - [`shape`]: splitting a document into literals and values.
//! - [`Encoder`] / [`Decoder`]: the frames of one direction.
//! - [`frame`]: reading frames, the preface, RAW and ERROR frames.
//! - [`negotiation`]: the `OpenStream` exchange.
//! - [`StreamLink`] / [`StreamSender`]: the sending side, with its per-message fallback to
//!   SOAP/HTTP; [`StreamingClient`]: the Rust client as a sender;
//!   [`serve_connection`]: the receiving side.
//!
//! The wire format is described in `docs/context.md`.

mod client;
mod codec;
pub mod duplex;
pub mod frame;
mod link;
pub mod negotiation;
mod schema;
mod sender;
mod serve;
pub mod shape;
mod varint;

pub use client::StreamingClient;
pub use codec::{CodecLimits, Decoded, Decoder, EncodeError, Encoder, FrameHead, StreamMessage};
pub use link::{StreamLink, StreamLinkError, StreamLinkSettings, StreamReply};
pub use sender::{
    OnError, SendOutcome, SenderSettings, SenderStats, StreamSender, StreamTransport, Unstreamed,
};
pub use serve::{AcceptLimits, Handoff, StreamTokens, serve_connection};

/// The kinds of frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum FrameKind {
    /// A new schema.
    Schema = 1,
    /// A request in a schema.
    Message = 2,
    /// A reply in a schema.
    Reply = 3,
    /// A request or reply sent whole.
    Raw = 4,
    /// The other side could not take a request, or the stream.
    Error = 5,
}

impl TryFrom<u8> for FrameKind {
    type Error = WireError;

    fn try_from(b: u8) -> Result<Self, WireError> {
        Ok(match b {
            1 => FrameKind::Schema,
            2 => FrameKind::Message,
            3 => FrameKind::Reply,
            4 => FrameKind::Raw,
            5 => FrameKind::Error,
            _ => return Err(WireError::Malformed("an unknown frame kind")),
        })
    }
}

/// A stream that cannot be read on.
#[derive(Debug, thiserror::Error)]
pub enum WireError {
    /// Bytes that are not the format.
    #[error("malformed stream: {0}")]
    Malformed(&'static str),
    /// Within the format, beyond a bound.
    #[error("stream over its limits: {0}")]
    Limit(&'static str),
    /// The connection failed.
    #[error("stream connection: {0}")]
    Io(#[from] std::io::Error),
}

/// A mutex's guard, taken over from a holder that panicked: the maps it guards stay
/// consistent at every step.
fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The representation this version speaks, as named in the negotiation.
pub const REPRESENTATION: &str = "lather-stream/1";
