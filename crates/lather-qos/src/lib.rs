//! WS-QoS for lather (seed 004): what a client states about the quality it needs, and the
//! server's answers to it.
//!
//! - [`Requirements`]: the optional QoS SOAP header (`urn:lather:qos`) — compression
//!   preference, traffic class, response time.
//! - [`QosPolicy`]: load-adaptive compression — `server-decides` responses are
//!   compressed only while lather's CPU share ([`CpuGauge`]) is below `[qos]
//!   compress_below_cpu`; each answer's DiffServ code point by its traffic class
//!   (`[qos.class.NAME] dscp`); `[[qos.client]]` rules stand in for clients that cannot
//!   send the header.

mod cpu_gauge;
mod policy;
mod requirements;

pub use cpu_gauge::{CpuGauge, SAMPLE_EVERY, WINDOW};
pub use lather_config::CompressionPreference;
pub use policy::{Decision, QosPolicy};
pub use requirements::{QOS_NS, Requirements, header_name};
