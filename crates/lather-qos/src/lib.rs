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
//! - [`Offer`]s: what a service promises (response time, throughput, price, compression,
//!   class), served by the service ([`ServiceOffers`]), their price following the load
//!   when adaptive ([`AdaptivePrice`]), and a [`broker`] that picks the best for a client.

mod adaptive;
pub mod broker;
mod cpu_gauge;
mod latency;
mod offer;
mod offers;
mod policy;
mod requirements;

pub use adaptive::AdaptivePrice;
pub use cpu_gauge::{CpuGauge, SAMPLE_EVERY, WINDOW};
pub use latency::LatencyWindow;
pub use lather_config::CompressionPreference;
pub use offer::{MAX_OFFER_TEXT, Offer, offers_document, offers_of};
pub use offers::ServiceOffers;
pub use policy::{Decision, QosPolicy, Requester};
pub use requirements::{QOS_NS, Requirements, header_name};
