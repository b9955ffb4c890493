//! Handler doubles for tests: small [`Handler`]s with one behaviour each, to exercise a
//! plan, a stage or a host around your own handler (feature `test-util`).
//!
//! The header blocks they read and write are named in the namespace [`NS`]; [`name`]
//! makes such a name. None of them is meant for production use.
//!
//! ```
//! use lather_pipeline::doubles::{Refuse, Stamp};
//! use lather_pipeline::{Options, Plan, Step};
//! use std::sync::Arc;
//!
//! let plan = Plan::new(vec![
//!     vec![Arc::new(Step::new("stamp", Arc::new(Stamp("X", "1")), Options::default()))],
//!     vec![Arc::new(Step::new("refuse", Arc::new(Refuse), Options::default()))],
//! ])
//! .expect("valid plan");
//! assert_eq!(plan.stages().len(), 2);
//! ```

use crate::{Access, Handler, HandlerFuture, Message, Parts, Patch, Verdict};
use lather_envelope::{Envelope, EnvelopeBuilder, Fault, FaultKind, Limits, QName, SoapVersion};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

/// The namespace of the header blocks the doubles read and write.
pub const NS: &str = "urn:test";

/// The header name `{urn:test}local`.
pub fn name(local: &str) -> QName {
    QName::new(NS, local)
}

/// Does nothing: continues with an empty patch, declares no access.
#[derive(Debug, Clone, Copy, Default)]
pub struct Nop;

impl Handler for Nop {
    fn access(&self) -> Access {
        Access::default()
    }
    fn call<'a>(&'a self, _: &'a Message) -> HandlerFuture<'a> {
        Box::pin(async { Verdict::proceed() })
    }
}

/// Sets header block `{urn:test}.0` to an element holding the text `.1` (replacing the
/// first block of that name, or adding one); declares that write.
#[derive(Debug, Clone, Copy)]
pub struct Stamp(pub &'static str, pub &'static str);

impl Handler for Stamp {
    fn access(&self) -> Access {
        Access {
            reads: Parts::none(),
            writes: Parts::none().header(name(self.0)),
        }
    }
    fn call<'a>(&'a self, _: &'a Message) -> HandlerFuture<'a> {
        Box::pin(async move {
            let block = EnvelopeBuilder::text_element(NS, "t", self.0, self.1);
            Verdict::Continue(Patch::new().replace_header(name(self.0), block))
        })
    }
}

/// Continues if header block `{urn:test}.0` is present, else faults with
/// [`FaultKind::InvalidEnvelope`] (reason `"<name> missing"`); declares that read.
#[derive(Debug, Clone, Copy)]
pub struct Requires(pub &'static str);

impl Handler for Requires {
    fn access(&self) -> Access {
        Access::read_only(Parts::none().header(name(self.0)))
    }
    fn call<'a>(&'a self, m: &'a Message) -> HandlerFuture<'a> {
        Box::pin(async move {
            if m.envelope().header(&name(self.0)).is_some() {
                Verdict::proceed()
            } else {
                Verdict::Fault(Fault::with_reason(
                    FaultKind::InvalidEnvelope,
                    format!("{} missing", self.0),
                ))
            }
        })
    }
}

/// Always faults with [`FaultKind::InvalidEnvelope`] (reason `"refused"`).
#[derive(Debug, Clone, Copy, Default)]
pub struct Refuse;

impl Handler for Refuse {
    fn access(&self) -> Access {
        Access::default()
    }
    fn call<'a>(&'a self, _: &'a Message) -> HandlerFuture<'a> {
        Box::pin(async {
            Verdict::Fault(Fault::with_reason(FaultKind::InvalidEnvelope, "refused"))
        })
    }
}

/// Sleeps (tokio's timer) for `.0`, then continues: a slow I/O-bound handler.
#[derive(Debug, Clone, Copy)]
pub struct Pause(pub Duration);

impl Handler for Pause {
    fn access(&self) -> Access {
        Access::default()
    }
    fn call<'a>(&'a self, _: &'a Message) -> HandlerFuture<'a> {
        Box::pin(async move {
            tokio::time::sleep(self.0).await;
            Verdict::proceed()
        })
    }
}

/// Panics on its first `n` calls, then continues; counts every call in `calls`.
#[derive(Debug)]
pub struct Flaky {
    /// Panics still to come.
    pub panics_left: AtomicU32,
    /// Calls so far (shared, so the test keeps a handle).
    pub calls: Arc<AtomicU32>,
}

impl Flaky {
    /// A handler that panics on its first `n` calls, counting calls in `calls`.
    pub fn new(n: u32, calls: Arc<AtomicU32>) -> Self {
        Flaky {
            panics_left: AtomicU32::new(n),
            calls,
        }
    }
}

impl Handler for Flaky {
    fn access(&self) -> Access {
        Access::default()
    }
    fn call<'a>(&'a self, _: &'a Message) -> HandlerFuture<'a> {
        Box::pin(async move {
            self.calls.fetch_add(1, Ordering::SeqCst);
            let left = self.panics_left.load(Ordering::SeqCst);
            if left > 0 {
                self.panics_left.store(left - 1, Ordering::SeqCst);
                panic!("flaky handler, {left} panics left");
            }
            Verdict::proceed()
        })
    }
}

/// Waits at a barrier shared with its stage-mates, then continues: it finishes only if
/// they run concurrently.
#[derive(Debug, Clone)]
pub struct Meet(pub Arc<tokio::sync::Barrier>);

impl Handler for Meet {
    fn access(&self) -> Access {
        Access::default()
    }
    fn call<'a>(&'a self, _: &'a Message) -> HandlerFuture<'a> {
        Box::pin(async move {
            self.0.wait().await;
            Verdict::proceed()
        })
    }
}

/// Answers the requester itself with a SOAP 1.2 envelope whose Body is `<cached/>`.
#[derive(Debug, Clone, Copy, Default)]
pub struct RespondEarly;

impl Handler for RespondEarly {
    fn access(&self) -> Access {
        Access::default()
    }
    fn call<'a>(&'a self, _: &'a Message) -> HandlerFuture<'a> {
        Box::pin(async {
            let bytes = EnvelopeBuilder::new(SoapVersion::V12)
                .body("<cached/>".into())
                .build();
            match Envelope::parse(bytes, &Limits::default()) {
                Ok(envelope) => Verdict::Respond(Box::new(envelope)),
                Err(e) => Verdict::Fault(Fault::with_reason(FaultKind::Internal, e.to_string())),
            }
        })
    }
}

/// Declares only a read of the Body but replaces it: what the engine must catch.
#[derive(Debug, Clone, Copy, Default)]
pub struct Liar;

impl Handler for Liar {
    fn access(&self) -> Access {
        Access::read_only(Parts::none().body())
    }
    fn call<'a>(&'a self, _: &'a Message) -> HandlerFuture<'a> {
        Box::pin(async { Verdict::Continue(Patch::new().replace_body("<x/>")) })
    }
}

/// Waits for a permit from `go`, counts itself in `done`, then continues — or faults with
/// [`FaultKind::Internal`] when `fault` is set; declares a read of the Body.
#[derive(Debug)]
pub struct WaitThen {
    /// The semaphore whose permit releases the handler.
    pub go: Arc<tokio::sync::Semaphore>,
    /// Fault instead of continuing.
    pub fault: bool,
    /// Handlers that got their permit.
    pub done: Arc<AtomicU32>,
}

impl Handler for WaitThen {
    fn access(&self) -> Access {
        Access::read_only(Parts::none().body())
    }
    fn call<'a>(&'a self, _: &'a Message) -> HandlerFuture<'a> {
        Box::pin(async move {
            let _permit = self.go.acquire().await;
            self.done.fetch_add(1, Ordering::SeqCst);
            if self.fault {
                Verdict::Fault(Fault::new(FaultKind::Internal))
            } else {
                Verdict::proceed()
            }
        })
    }
}
