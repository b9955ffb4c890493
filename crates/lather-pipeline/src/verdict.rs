//! What a handler answers.

use crate::Patch;
use lather_envelope::{Envelope, Fault};

/// A handler's answer for one message.
#[derive(Debug, Clone)]
pub enum Verdict {
    /// Go on, with these changes (possibly none) applied after the stage.
    Continue(Patch),
    /// Stop processing and answer the requester with this envelope.
    Respond(Box<Envelope>),
    /// Stop processing and answer with this fault (unless the handler is not
    /// `must_perform`, in which case the fault is logged, counted and ignored).
    Fault(Fault),
}

impl Verdict {
    /// `Continue` with no changes.
    pub fn proceed() -> Self {
        Verdict::Continue(Patch::new())
    }
}
