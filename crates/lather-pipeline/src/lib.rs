//! lather's handler contract and stage executor.
//!
//! A service's cross-cutting work is split into [`Handler`]s. A [`Plan`] lists them in
//! stages: the handlers of a stage run at the same time on one snapshot of the message, and
//! their [`Patch`]es are merged after the stage; stages run in order. Each handler declares
//! its [`Access`], so a plan whose stage would let two handlers touch the same part is
//! refused when it is built, not discovered at run time.
//!
//! [`run`] takes a message through a plan and says how it left: [`Outcome::Continue`] with
//! the patched message, [`Outcome::Respond`] when a handler answered itself, or
//! [`Outcome::Fault`]. Failures follow each handler's [`Options`]: `must_perform`, `oneway`,
//! `retries` with backoff for stateless handlers, a per-attempt timeout; a panicking
//! handler is a failure like any other, and the process lives on.

mod access;
mod address_text;
pub mod affinity;
mod attempt;
mod auto;
mod cost;
mod cpu_pool;
#[cfg(feature = "test-util")]
pub mod doubles;
mod fnv;
mod gate;
mod handler;
mod kind;
mod message;
mod patch;
mod plan;
mod property;
mod run;
mod service;
pub mod telemetry;
mod understand;
mod verdict;

pub use access::{Access, Clash, Part, Parts};
pub use address_text::{Ipv4Text, ip_text, ipv4_text};
pub use attempt::current_attempt;
pub use auto::Order;
pub use cost::Cost;
pub use cpu_pool::{CpuPool, DEFAULT_INLINE_BELOW, run_cpu_bound};
pub use fnv::{Fnv, FnvMap};
pub use gate::{Busy, Gate, GateStats, LimitPolicy, Permit, Priority};
pub use handler::{Handler, HandlerFuture, Observation, ObservationKind, Options, Work};
pub use kind::{BuildEnv, DynKind, HandlerKind, KindError, KindRegistry, Resources, SettingsError};
pub use message::{Context, Direction, Message};
pub use patch::{Patch, PatchOp};
pub use plan::{Counters, Plan, PlanError, Step};
pub use property::{
    ClientCertificate, Identity, Properties, Property, PropertyValue, ReplyStatus,
    RequestCacheControl,
};
pub use run::{Outcome, run};
pub use service::{
    Location, Ready, Reply, ServiceFn, ServiceFuture, ServiceRequest, SoapService, service_fn,
};
pub use understand::check_must_understand;
pub use verdict::Verdict;
