//! Whatever comes back on a call's reply subject: progress or the answer.

use super::wire::Reader;
use super::{Answer, FrameError, KIND_ACK, KIND_ANSWER, KIND_HEARTBEAT, Progress, read_any_start};
use bytes::Bytes;

/// One frame a worker sent to a call's reply subject.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// An acknowledgement or a heartbeat.
    Progress(Progress),
    /// The answer, which ends the call.
    Answer(Answer),
}

impl Reply {
    /// Reads a progress or answer frame by its kind byte; any other bytes are a
    /// [`FrameError`].
    pub fn decode(bytes: Bytes) -> Result<Reply, FrameError> {
        let kind = read_any_start(&mut Reader::new(bytes.clone()))?;
        match kind {
            KIND_ANSWER => Answer::decode(bytes).map(Reply::Answer),
            KIND_ACK | KIND_HEARTBEAT => Progress::decode(bytes).map(Reply::Progress),
            other => Err(FrameError::WrongKind(other)),
        }
    }
}
