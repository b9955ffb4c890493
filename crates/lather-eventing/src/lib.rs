//! lather's WS-Eventing event source: Subscribe, Renew, GetStatus, Unsubscribe and
//! SubscriptionEnd in WS-Eventing 2004/08 (with WS-Addressing 2004/08 or 1.0) and the W3C
//! Recommendation of 2011, answered in the version each request speaks; push delivery over
//! SOAP/HTTP, SOAP over TCP or lather's binary frame (by the NotifyTo scheme, see
//! [`binding`]) with a bounded queue and a connection per sink; subscriptions kept
//! in a redb file across restarts. See `docs/eventing.md`.
//!
//! Extension points: [`Version`] for further eventing versions (e.g. WS-BaseNotification
//! would answer beside it), `request::topics` for filter dialects (XPath), and
//! `delivery::send_once` for other bindings (TCP framing, binary).

pub mod binding;
mod delivery;
mod event;
mod expires;
mod problem;
mod reply;
mod request;
mod source;
mod store;
mod subscription;
mod version;

pub use binding::Binding;
pub use delivery::{DeliveryProbe, ProbeFn, RetryPolicy};
pub use event::{Event, EventHeader, unix_ns};
pub use reply::EndStatus;
pub use source::{DEFAULT_EVENT_ACTION, EventSource, SourceSettings};
pub use subscription::{Endpoint, Subscription};
pub use version::{LATHER_EVENTING_NS, PUSH_MODE, TOPIC_DIALECT, UNWRAP_FORMAT, Version};
