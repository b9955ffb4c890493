//! Remote handler stages over NATS.
//!
//! A handler configured with `placement = "remote"` runs on a `lather worker` process,
//! possibly on another machine. The serving process wraps it in a [`RemoteHandler`], which
//! sends a [`frame::CallRequest`] — the message id, its properties and only the parts the
//! handler declared it reads — to the subject `{prefix}.handler.{name}`; workers answer in a
//! queue group per handler (see [`worker`]), so several share the load and a retry may land
//! on another one. When NATS or every worker is unavailable the handler follows its
//! `fallback`: run the local instance, or fault.
//!
//! A oneway remote handler ([`OnewayRemoteHandler`]) is not waited on: its frame is
//! published to the JetStream work-queue stream ([`oneway_stream`]) and workers pull it
//! from a durable consumer per handler ([`oneway_worker`]), acknowledging after handling —
//! delivery is at-least-once, and the message id is the idempotency key.
//!
//! With `[nats] batch_max_items` above 1, calls to one handler made together travel as one
//! NATS message ([`frame::CallBatch`], cut at `batch_max_items` or `batch_wait_ms`), and a
//! oneway handler's hand-offs as one JetStream message; each is still answered (or
//! acknowledged) on its own.
//!
//! A handler configured with `placement = "auto"` is wrapped in an [`AutoPlaced`], which
//! runs each call locally or remotely, wherever the measured times say the message finishes
//! sooner.

mod auto_placed;
mod call;
mod connect_options;
mod cutoffs;
pub mod frame;
mod frame_batcher;
mod hosted;
mod latency;
mod link;
mod oneway_batcher;
mod oneway_counters;
mod oneway_handler;
pub mod oneway_stream;
pub mod oneway_worker;
mod queue_subscriptions;
mod remote_handler;
mod reply_router;
mod shipping;
mod stand_in;
mod trace;
pub mod worker;

pub use auto_placed::{AutoCounters, AutoPlaced, EXPLORE_EVERY, Side, choose};
pub use connect_options::{NatsSetupError, connect_options};
pub use latency::{ADAPTIVE_AFTER_CALLS, ADAPTIVE_FACTOR, ADAPTIVE_FLOOR};
pub use link::{Link, LinkError, Liveness, OnewayLimits};
pub use oneway_handler::{OnewayCounters, OnewayRemoteHandler};
pub use remote_handler::{CallSplit, RemoteCounters, RemoteHandler};
pub use shipping::{rebuild_message, request_for};
pub use trace::{trace_id, traceparent};
