//! The wire frame between a service and its workers, version 3 (see `docs/remote-frame.md`).
//!
//! A [`CallRequest`] carries a message id, the properties a handler may look at and only the
//! parts of the message the handler declared it reads; an [`Answer`] carries the handler's
//! patch, its own response or its fault. Between the two, the worker sends [`Progress`]
//! frames to the same reply subject: an acknowledgement at once, then a heartbeat at the
//! interval the request asks for, so a caller knows in milliseconds when a call is lost. Both start with [`MAGIC`], [`VERSION`] and a kind
//! byte. Big-endian throughout; strings are UTF-8 after a u16 length, byte strings follow a
//! u32 length. Decoding checks every length against the bytes that are left, so arbitrary
//! input gives a [`FrameError`], never a panic or an allocation beyond its own size.

mod answer;
mod batch;
mod progress;
mod reply;
mod request;
pub(crate) mod wire;

pub use answer::{Answer, RemoteVerdict, WorkerTiming};
pub use batch::{BatchItem, CallBatch};
pub use progress::{Progress, ProgressKind};
pub use reply::Reply;
pub use request::{CallRequest, Payload};

use std::fmt;

/// The first four bytes of every frame.
pub const MAGIC: [u8; 4] = *b"LTHR";
/// The frame layout this crate writes and reads.
pub const VERSION: u8 = 3;
/// Kind byte of a request frame.
pub(crate) const KIND_REQUEST: u8 = 1;
/// Kind byte of an answer frame.
pub(crate) const KIND_ANSWER: u8 = 2;
/// Kind byte of an acknowledgement (the worker took the request).
pub(crate) const KIND_ACK: u8 = 3;
/// Kind byte of a heartbeat (the worker is still on the request).
pub(crate) const KIND_HEARTBEAT: u8 = 4;
/// Kind byte of a batch of request frames.
pub(crate) const KIND_BATCH: u8 = 5;

/// Why bytes are not a frame (decoding), or a value does not fit one (encoding).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FrameError {
    /// The bytes end inside this field, or a length/count runs past the end.
    Truncated(&'static str),
    /// The first four bytes are not [`MAGIC`].
    BadMagic,
    /// A frame layout this build does not know.
    UnsupportedVersion(u8),
    /// A request where an answer was expected, or the other way round.
    WrongKind(u8),
    /// This field holds a value outside its range (an unknown tag, code or flag).
    BadValue(&'static str),
    /// This string field is not UTF-8.
    NotUtf8(&'static str),
    /// Bytes are left after the frame's last field.
    TrailingBytes(usize),
    /// Encoding: this value is longer than its length field allows.
    TooLong(&'static str),
    /// Encoding: the patch sets a message-context property of a type a frame cannot carry
    /// (only the authenticated identity travels).
    UnshippableProperty,
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FrameError::Truncated(what) => write!(f, "the frame ends inside its {what}"),
            FrameError::BadMagic => f.write_str("not a lather frame (bad magic)"),
            FrameError::UnsupportedVersion(v) => {
                write!(
                    f,
                    "frame version {v} is not supported (this build speaks {VERSION})"
                )
            }
            FrameError::WrongKind(k) => write!(f, "unexpected frame kind {k}"),
            FrameError::BadValue(what) => write!(f, "the frame's {what} is out of range"),
            FrameError::NotUtf8(what) => write!(f, "the frame's {what} is not UTF-8"),
            FrameError::TrailingBytes(n) => write!(f, "{n} bytes follow the frame's end"),
            FrameError::TooLong(what) => write!(f, "the {what} is too long for a frame"),
            FrameError::UnshippableProperty => f.write_str(
                "the patch sets a message-context property other than the identity, which a frame cannot carry",
            ),
        }
    }
}

impl std::error::Error for FrameError {}

/// Writes magic, version and kind.
fn write_start(w: &mut wire::Writer, kind: u8) {
    w.raw(&MAGIC);
    w.u8(VERSION);
    w.u8(kind);
}

/// Reads and checks magic, version and kind.
fn read_start(r: &mut wire::Reader, kind: u8) -> Result<(), FrameError> {
    let got = read_any_start(r)?;
    if got != kind {
        return Err(FrameError::WrongKind(got));
    }
    Ok(())
}

/// Reads and checks magic and version; the kind byte, whatever it is.
fn read_any_start(r: &mut wire::Reader) -> Result<u8, FrameError> {
    if r.raw(4, "magic")?[..] != MAGIC {
        return Err(FrameError::BadMagic);
    }
    let version = r.u8("version")?;
    if version != VERSION {
        return Err(FrameError::UnsupportedVersion(version));
    }
    r.u8("kind")
}
