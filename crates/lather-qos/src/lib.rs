//! WS-QoS for lather (seed 004): what a client states about the quality it needs, and the
//! server's answers to it.
//!
//! - [`Requirements`]: the optional QoS SOAP header (`urn:lather:qos`) — compression
//!   preference, traffic class, response time.
//! - [`CompressionPolicy`]: load-adaptive compression — `server-decides` responses are
//!   compressed only while lather's CPU share ([`CpuGauge`]) is below `[qos]
//!   compress_below_cpu`; `[[qos.client]]` rules stand in for clients that cannot send the
//!   header.

mod compression;
mod cpu_gauge;
mod requirements;

pub use compression::{CompressionPolicy, Decision};
pub use cpu_gauge::{CpuGauge, SAMPLE_EVERY, WINDOW};
pub use lather_config::CompressionPreference;
pub use requirements::{QOS_NS, Requirements, header_name};
