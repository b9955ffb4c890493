//! The progress frames a worker sends before its answer: an acknowledgement when it takes
//! a request, then heartbeats while the request is in hand.

use super::wire::{Reader, Writer};
use super::{FrameError, KIND_ACK, KIND_HEARTBEAT, read_any_start, write_start};
use bytes::Bytes;

/// What a progress frame says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProgressKind {
    /// The worker took the request (sent as soon as it read it, before the handler runs).
    Ack,
    /// The worker is still on the request (sent every heartbeat interval until the answer).
    Heartbeat,
}

/// A worker's word that it has the request with this id in hand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    /// The request's message id.
    pub id: u128,
    /// Acknowledgement or heartbeat.
    pub kind: ProgressKind,
}

impl Progress {
    /// The frame's 22 bytes: start, then the message id.
    pub fn encode(&self) -> Bytes {
        let mut w = Writer::with_capacity(22);
        write_start(
            &mut w,
            match self.kind {
                ProgressKind::Ack => KIND_ACK,
                ProgressKind::Heartbeat => KIND_HEARTBEAT,
            },
        );
        w.u128(self.id);
        w.finish()
    }

    /// Reads a progress frame; any other bytes are a [`FrameError`].
    pub fn decode(bytes: Bytes) -> Result<Progress, FrameError> {
        let mut r = Reader::new(bytes);
        let kind = match read_any_start(&mut r)? {
            KIND_ACK => ProgressKind::Ack,
            KIND_HEARTBEAT => ProgressKind::Heartbeat,
            other => return Err(FrameError::WrongKind(other)),
        };
        let id = r.u128("message id")?;
        r.end()?;
        Ok(Progress { id, kind })
    }
}
