//! The handler contract.

use crate::{Access, Message, Verdict};
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

/// The future a handler returns.
pub type HandlerFuture<'a> = Pin<Box<dyn Future<Output = Verdict> + Send + 'a>>;

/// A unit of cross-cutting work on messages: security, logging, monitoring, compression,
/// format conversion, eventing, state.
///
/// # Contract
///
/// [`Handler::call`] reads the message and answers with a [`Verdict`]: `Continue` with a
/// [`Patch`](crate::Patch) of the parts it changes, `Respond` to answer the requester
/// itself, or `Fault`. It never changes shared state it did not declare: everything it reads
/// and writes of the message is in [`Handler::access`], and the engine refuses a patch that
/// writes an undeclared part.
///
/// # Concurrency
///
/// Handlers of one stage run at the same time, each on the same snapshot of the message;
/// their patches are merged after the stage, in the stage's order. This is only sound if
/// their accesses do not clash (see [`Access::clash`]), which the engine checks when the
/// plan is built. One handler value serves many messages at once: `call` takes `&self`.
///
/// # Cancel safety
///
/// The engine itself drops a handler's future in one case: the attempt's
/// [`Options::timeout`] expires. The future is dropped at the `.await` it is waiting on (a
/// handler that never yields is not interrupted), and a stateless handler may then be
/// called again ([`Options::retries`]). If the caller of [`run`](crate::run) drops its
/// future (the host gave up on the message), the handlers of the running stage that run
/// inline are dropped with it; those on the CPU pool (see [`Work::Cpu`]) run on to the end
/// of their attempt and their verdict is discarded.
///
/// A handler is *not* cancelled when another handler of its stage faults or answers: the
/// engine waits for every handler of the stage, then halts the message, and the later
/// stages never start. [`Options::oneway`] handlers run on their own task and are never
/// cancelled by what becomes of the message.
///
/// A handler that writes outside the message (a file, a store) must leave it consistent if
/// dropped at any `.await`.
///
/// # Backpressure
///
/// Handlers do not queue work themselves: the engine admits messages and bounds how many are
/// in flight. A handler that waits on I/O should say so with [`Work::Io`]; CPU-heavy work
/// should declare [`Work::Cpu`].
///
/// # Example
///
/// ```
/// use lather_envelope::{EnvelopeBuilder, QName};
/// use lather_pipeline::{Access, Handler, HandlerFuture, Message, Parts, Patch, Verdict};
///
/// /// Stamps every message with the service that received it.
/// struct Stamp;
///
/// const STAMP: &str = "urn:example:stamp";
///
/// impl Handler for Stamp {
///     fn access(&self) -> Access {
///         Access { reads: Parts::none(), writes: Parts::none().header(QName::new(STAMP, "Via")) }
///     }
///
///     fn call<'a>(&'a self, message: &'a Message) -> HandlerFuture<'a> {
///         Box::pin(async move {
///             let block = EnvelopeBuilder::text_element(STAMP, "s", "Via", &message.context().service);
///             Verdict::Continue(Patch::new().replace_header(QName::new(STAMP, "Via"), block))
///         })
///     }
/// }
/// ```
pub trait Handler: Send + Sync + 'static {
    /// The parts of a message this handler reads and writes.
    fn access(&self) -> Access;

    /// Processes one message.
    fn call<'a>(&'a self, message: &'a Message) -> HandlerFuture<'a>;

    /// Figures the handler keeps for the metrics endpoint, read at each scrape. Most
    /// handlers keep none.
    fn observations(&self) -> Vec<Observation> {
        Vec::new()
    }
}

/// One figure a handler reports: a counter or gauge value with its labels.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Observation {
    /// Metric name, without lather's prefix (e.g. `monitor_messages`).
    pub name: &'static str,
    /// What it counts.
    pub help: &'static str,
    /// Counter (only grows) or gauge.
    pub kind: ObservationKind,
    /// Label pairs, beyond the service and handler labels the host adds.
    pub labels: Vec<(&'static str, String)>,
    /// The value.
    pub value: u64,
}

impl Observation {
    /// A counter with no labels beyond the host's.
    pub fn counter(name: &'static str, help: &'static str, value: u64) -> Self {
        Observation {
            name,
            help,
            kind: ObservationKind::Counter,
            labels: Vec::new(),
            value,
        }
    }

    /// A gauge with no labels beyond the host's.
    pub fn gauge(name: &'static str, help: &'static str, value: u64) -> Self {
        Observation {
            kind: ObservationKind::Gauge,
            ..Observation::counter(name, help, value)
        }
    }
}

/// Whether an [`Observation`] is a counter or a gauge.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ObservationKind {
    /// Only grows.
    Counter,
    /// Goes up and down.
    Gauge,
}

/// What bounds a handler's time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Work {
    /// Mostly waiting (files, network): runs on the I/O threads.
    #[default]
    Io,
    /// Mostly computing: runs on its own task so a stage's CPU work spreads over cores.
    Cpu,
}

/// How the engine treats a handler: failure policy, retries, timeout, kind of work.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// Its failure (fault, timeout, panic) halts the message with a fault (default); if
    /// false, the failure is logged, counted and ignored.
    pub must_perform: bool,
    /// Fire and forget: the message does not wait for it; failures are counted. A oneway
    /// handler may not write.
    pub oneway: bool,
    /// Extra attempts after a timeout or panic; only for stateless handlers.
    pub retries: u32,
    /// The first retry waits this long; each further retry twice as long.
    pub retry_backoff: Duration,
    /// Time allowed for one attempt.
    pub timeout: Duration,
    /// Safe to call again for the same message (so it may be retried).
    pub stateless: bool,
    /// CPU- or I/O-bound.
    pub work: Work,
    /// Reads the message as it entered its stage: it may share a stage with handlers that
    /// write what it reads (it sees their input, not their output). An observer such as an
    /// audit log or a monitor of what was received says so; writers never clash less.
    pub snapshot: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            must_perform: true,
            oneway: false,
            retries: 0,
            retry_backoff: Duration::from_millis(5),
            timeout: Duration::from_secs(30),
            stateless: true,
            work: Work::Io,
            snapshot: false,
        }
    }
}
