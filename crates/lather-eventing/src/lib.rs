//! lather's WS-Eventing event source: Subscribe, Renew, GetStatus, Unsubscribe and
//! SubscriptionEnd in WS-Eventing 2004/08 (with WS-Addressing 2004/08 or 1.0) and the W3C
//! Recommendation of 2011, answered in the version each request speaks; push delivery over
//! SOAP/HTTP, SOAP over TCP or lather's binary frame (by the NotifyTo scheme, see
//! [`binding`]) with a bounded queue and a connection per sink; subscriptions kept
//! in a redb file across restarts, or shared by several nodes in a NATS JetStream KV bucket
//! with events taken from a NATS subject ([`EventSource::share_over_nats`]).
//! WS-BaseNotification 1.3 is answered beside it (module `wsn`, dispatched on the Body's
//! namespace). See `docs/eventing.md`.
//!
//! Filters: lather's topic dialect and XPath 1.0 ([`xpath`]); notifications may be
//! gzip-compressed on the subscriber's request (every binding); 2011 subscribers may ask
//! for the Wrap format ([`WRAP_FORMAT`]). SubscriptionEnd goes in the EndTo's binding.
//!
//! Extension points: [`Version`] for further eventing versions (e.g. WS-BaseNotification
//! would answer beside it), `filter::read` for filter dialects, and
//! `delivery::send_once` for other bindings (TCP framing, binary).

mod action_filter;
pub mod address_policy;
pub mod binding;
pub mod client;
mod compression;
mod delivery;
mod event;
mod expires;
mod filter;
mod format;
mod gauges;
mod keeping;
mod kv_store;
mod kv_sync;
mod nats_events;
mod problem;
mod quota;
mod reply;
mod request;
mod shared;
mod sink_queue;
mod source;
mod store;
mod subscription;
mod version;
mod wsn;
pub mod xpath;
mod xpath_eval;
mod xpath_syntax;
mod xpath_tree;

pub use action_filter::{DPWS_ACTION_DIALECT, DPWS06_ACTION_DIALECT};
pub use address_policy::DeliveryPolicy;
pub use binding::Binding;
pub use compression::{COMPRESSIONS, DEFAULT_COMPRESS_MIN_BYTES};
pub use delivery::{DeliveryProbe, ProbeFn, RetryPolicy};
pub use event::{Event, EventHeader, unix_ns};
pub use format::{NOTIFY_EVENT_ACTION, WRAP_FORMAT};
pub use reply::EndStatus;
pub use shared::SharedSettings;
pub use source::{
    DEFAULT_EVENT_ACTION, DEFAULT_MAX_SUBSCRIPTIONS_PER_IDENTITY, DEFAULT_QUEUE_BYTES_TOTAL,
    DEFAULT_SINK_QUEUE_BYTES, EventSource, SourceSettings,
};
pub use subscription::{Endpoint, Subscription};
pub use version::{LATHER_EVENTING_NS, PUSH_MODE, TOPIC_DIALECT, UNWRAP_FORMAT, Version};
pub use wsn::{
    CONCRETE_DIALECT, MessageContent, SIMPLE_DIALECT, TopicDialect, TopicFilter, WSN_FAULT_ACTION,
    WSN_NS, WsnTerms,
};
