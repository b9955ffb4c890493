//! Push delivery: each subscription has its own bounded queue ([`sink_queue`]) and its own
//! task ([`task`]) with its own connection in its binding ([`binding`]), so a slow or dead
//! sink only ever delays itself. Where notifications may go is the [`address_policy`].

pub mod address_policy;
pub mod binding;
pub(crate) mod error;
pub(crate) mod gauges;
pub(crate) mod retry;
pub(crate) mod sink_queue;
pub(crate) mod stamped;
pub(crate) mod task;

pub(crate) use crate::protocol::reply::Outgoing;
pub(crate) use binding::http::send_once;
pub(crate) use error::DeliveryError;
pub use retry::{DeliveryProbe, ProbeFn, RetryPolicy};
pub(crate) use task::{OnFailure, SinkLimits, Stop, spawn_sink};
