//! The answer frame: a worker's verdict for one request.

use super::wire::{Reader, Writer};
use super::{FrameError, KIND_ANSWER, read_start, write_start};
use bytes::Bytes;
use lather_envelope::{Fault, FaultKind};
use lather_pipeline::{Identity, Patch, PatchOp};

/// A worker's answer to the request with the same id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    /// The request's message id.
    pub id: u128,
    /// Where the worker's time went, for the caller's split of the call.
    pub timing: WorkerTiming,
    /// What the handler decided.
    pub verdict: RemoteVerdict,
}

/// The worker's side of one call, in microseconds (saturating at `u32::MAX`, ~71 minutes).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WorkerTiming {
    /// Inside the handler: the stage's call, as the engine times it.
    pub handler_us: u32,
    /// From the request frame's arrival to the answer frame's bytes: decoding, rebuilding
    /// the message, the handler and encoding.
    pub worker_us: u32,
}

/// The handler's verdict as it travels back (a `Respond` envelope stays bytes until the
/// caller parses it with its own limits).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RemoteVerdict {
    /// Go on, with this patch applied after the stage.
    Continue(Patch),
    /// Answer the requester with this envelope.
    Respond(Bytes),
    /// Halt with this fault.
    Fault(Fault),
}

const OUTCOME_CONTINUE: u8 = 0;
const OUTCOME_RESPOND: u8 = 1;
const OUTCOME_FAULT: u8 = 2;

const OP_ADD_HEADER: u8 = 1;
const OP_REPLACE_HEADER: u8 = 2;
const OP_REMOVE_HEADER: u8 = 3;
const OP_REPLACE_BODY: u8 = 4;
/// Sets the message's [`Identity`] property; the only property a frame carries.
const OP_SET_IDENTITY: u8 = 5;

/// Longest fault reason sent; a longer one is cut at a character boundary.
const MAX_REASON: usize = 4096;

impl Answer {
    /// The frame's bytes; fails if a part is 4 GiB or more, a name or the identity is longer
    /// than 65 535 bytes, or the patch sets a property other than [`Identity`] (the only
    /// one a frame carries). A fault reason is cut to 4096 bytes.
    pub fn encode(&self) -> Result<Bytes, FrameError> {
        let mut w = Writer::with_capacity(64);
        write_start(&mut w, KIND_ANSWER);
        w.u128(self.id);
        w.u32(self.timing.handler_us);
        w.u32(self.timing.worker_us);
        match &self.verdict {
            RemoteVerdict::Continue(patch) => {
                w.u8(OUTCOME_CONTINUE);
                let ops = patch.operations();
                w.count(ops.len(), "patch")?;
                for op in ops {
                    match op {
                        PatchOp::AddHeader(name, block) => {
                            w.u8(OP_ADD_HEADER);
                            w.qname(name)?;
                            w.blob32(block, "header block")?;
                        }
                        PatchOp::ReplaceHeader(name, block) => {
                            w.u8(OP_REPLACE_HEADER);
                            w.qname(name)?;
                            w.blob32(block, "header block")?;
                        }
                        PatchOp::RemoveHeader(name) => {
                            w.u8(OP_REMOVE_HEADER);
                            w.qname(name)?;
                        }
                        PatchOp::ReplaceBody(content) => {
                            w.u8(OP_REPLACE_BODY);
                            w.blob32(content, "body")?;
                        }
                        PatchOp::SetProperty(property) => {
                            let identity = property
                                .get::<Identity>()
                                .ok_or(FrameError::UnshippableProperty)?;
                            w.u8(OP_SET_IDENTITY);
                            w.str16(identity.name(), "identity")?;
                        }
                    }
                }
            }
            RemoteVerdict::Respond(envelope) => {
                w.u8(OUTCOME_RESPOND);
                w.blob32(envelope, "response envelope")?;
            }
            RemoteVerdict::Fault(fault) => {
                w.u8(OUTCOME_FAULT);
                w.u16(fault.kind().spec().id);
                let reason = fault.reason();
                w.str16(
                    &reason[..reason.floor_char_boundary(MAX_REASON)],
                    "fault reason",
                )?;
                w.count(fault.not_understood_names().len(), "not-understood list")?;
                for name in fault.not_understood_names() {
                    w.qname(name)?;
                }
                match fault.problem_header_name() {
                    None => w.u8(0),
                    Some(name) => {
                        w.u8(1);
                        w.qname(name)?;
                    }
                }
                w.opt_str16(fault.relates_to_id(), "relates-to id")?;
            }
        }
        Ok(w.finish())
    }

    /// Reads an answer frame; any other bytes are a [`FrameError`].
    pub fn decode(bytes: Bytes) -> Result<Answer, FrameError> {
        let mut r = Reader::new(bytes);
        read_start(&mut r, KIND_ANSWER)?;
        let id = r.u128("message id")?;
        let timing = WorkerTiming {
            handler_us: r.u32("handler time")?,
            worker_us: r.u32("worker time")?,
        };
        let outcome = match r.u8("outcome")? {
            OUTCOME_CONTINUE => {
                let n = r.count(1, "patch")?;
                let mut patch = Patch::new();
                for _ in 0..n {
                    let op = match r.u8("patch operation")? {
                        OP_ADD_HEADER => PatchOp::AddHeader(r.qname()?, r.blob32("header block")?),
                        OP_REPLACE_HEADER => {
                            PatchOp::ReplaceHeader(r.qname()?, r.blob32("header block")?)
                        }
                        OP_REMOVE_HEADER => PatchOp::RemoveHeader(r.qname()?),
                        OP_REPLACE_BODY => PatchOp::ReplaceBody(r.blob32("body")?),
                        OP_SET_IDENTITY => {
                            patch = patch.set_property(Identity(r.str16("identity")?));
                            continue;
                        }
                        _ => return Err(FrameError::BadValue("patch operation")),
                    };
                    patch = patch.with(op);
                }
                RemoteVerdict::Continue(patch)
            }
            OUTCOME_RESPOND => RemoteVerdict::Respond(r.blob32("response envelope")?),
            OUTCOME_FAULT => {
                let code = r.u16("fault code")?;
                let kind = FaultKind::ALL
                    .iter()
                    .copied()
                    .find(|k| k.spec().id == code)
                    .ok_or(FrameError::BadValue("fault code"))?;
                let reason = r.str16("fault reason")?;
                let mut fault = Fault::with_reason(kind, reason);
                let n = r.count(4, "not-understood list")?;
                let mut names = Vec::with_capacity(n);
                for _ in 0..n {
                    names.push(r.qname()?);
                }
                if !names.is_empty() {
                    fault = fault.not_understood(names);
                }
                match r.u8("problem header flag")? {
                    0 => {}
                    1 => fault = fault.problem_header(r.qname()?),
                    _ => return Err(FrameError::BadValue("problem header flag")),
                }
                if let Some(id) = r.opt_str16("relates-to id")? {
                    fault = fault.relates_to(id);
                }
                RemoteVerdict::Fault(fault)
            }
            _ => return Err(FrameError::BadValue("outcome")),
        };
        r.end()?;
        Ok(Answer {
            id,
            timing,
            verdict: outcome,
        })
    }
}
