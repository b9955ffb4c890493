//! lather's WS-Eventing event source: Subscribe, Renew, GetStatus, Unsubscribe and
//! SubscriptionEnd in WS-Eventing 2004/08 (with WS-Addressing 2004/08 or 1.0) and the W3C
//! Recommendation of 2011, answered in the version each request speaks; push delivery over
//! SOAP/HTTP, SOAP over TCP or lather's binary frame (by the NotifyTo scheme, see
//! [`binding`]) with a bounded queue and a connection per sink; subscriptions kept
//! (through [`SubscriptionStore`]) in memory, in a redb file across restarts, or shared by
//! several nodes in a NATS JetStream KV bucket with events taken from a NATS subject
//! ([`EventSource::share_over_nats`]).
//! WS-BaseNotification 1.3 is answered beside it (module `wsn`, dispatched on the Body's
//! namespace). See `docs/eventing.md`.
//!
//! Filters: lather's topic dialect and XPath 1.0 ([`xpath`]); notifications may be
//! gzip-compressed on the subscriber's request (every binding); 2011 subscribers may ask
//! for the Wrap format ([`WRAP_FORMAT`]). SubscriptionEnd goes in the EndTo's binding.
//!
//! Extension points: [`Version`] for further eventing versions, `protocol::filter::read`
//! for filter dialects, [`SubscriptionStore`] for other subscription homes, and
//! `delivery::binding` for other bindings.

//! # Layers
//!
//! Dependencies point downward only (checked by `.ci/module-cycles`):
//!
//! - `protocol` — no I/O: versions, requests, replies, faults, filters (topic, DPWS
//!   action, [`xpath`]), expiry, subscription records;
//! - [`store`] — the [`SubscriptionStore`] trait and its memory, redb and JetStream KV homes;
//! - `delivery` — sink queues, retry and the bindings ([`binding`], [`address_policy`]);
//! - `source` — the [`EventSource`] facade: requests, publish, sweep, SubscriptionEnd;
//! - [`client`] — a subscriber: Subscribe, Renew, GetStatus, Unsubscribe and a sink.

pub mod client;
mod delivery;
mod error;
mod protocol;
mod source;
pub mod store;

pub use delivery::{address_policy, binding};
pub use protocol::xpath;

pub use delivery::address_policy::DeliveryPolicy;
pub use delivery::binding::Binding;
pub use delivery::binding::post::post_once;
pub use delivery::error::DeliveryError;
pub use delivery::{DeliveryProbe, ProbeFn, RetryPolicy};
pub use error::EventingError;
pub use protocol::action_filter::{DPWS_ACTION_DIALECT, DPWS06_ACTION_DIALECT};
pub use protocol::compression::{COMPRESSIONS, DEFAULT_COMPRESS_MIN_BYTES, GunzipError};
pub use protocol::event::{Event, EventHeader, unix_ns};
pub use protocol::format::{NOTIFY_EVENT_ACTION, WRAP_FORMAT};
pub use protocol::reply::EndStatus;
pub use protocol::subscription::{Endpoint, Subscription};
pub use protocol::version::{LATHER_EVENTING_NS, PUSH_MODE, TOPIC_DIALECT, UNWRAP_FORMAT, Version};
pub use protocol::wsn::{
    CONCRETE_DIALECT, MessageContent, SIMPLE_DIALECT, TopicDialect, TopicFilter, WSN_FAULT_ACTION,
    WSN_NS, WsnTerms,
};
pub use source::{
    DEFAULT_EVENT_ACTION, DEFAULT_MAX_SUBSCRIPTIONS_PER_IDENTITY, DEFAULT_QUEUE_BYTES_TOTAL,
    DEFAULT_SINK_QUEUE_BYTES, EventSource, SharedSettings, SinkDepths, SourceSettings,
};
pub use store::{StoreError, SubscriptionStore};
