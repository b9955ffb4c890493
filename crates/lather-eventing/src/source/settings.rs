//! How an event source behaves: its settings and their defaults.

use crate::delivery::address_policy::DeliveryPolicy;
use crate::delivery::{DeliveryProbe, RetryPolicy};
use std::path::PathBuf;
use std::time::Duration;

/// The `wsa:Action` of notifications whose publish request named none.
pub const DEFAULT_EVENT_ACTION: &str = "urn:lather:eventing:Event";

/// How an event source behaves.
#[derive(Debug, Clone)]
pub struct SourceSettings {
    /// The redb file subscriptions are kept in; `None` keeps them in memory only.
    pub store: Option<PathBuf>,
    /// The longest expiration granted; also the grant when a Subscribe asks for none.
    pub max_expires: Duration,
    /// Most subscriptions held at once.
    pub max_subscriptions: usize,
    /// Notifications that may wait per sink; beyond it new ones are dropped for that sink.
    pub queue_capacity: usize,
    /// Delivery retries and timeout.
    pub retry: RetryPolicy,
    /// How often expired subscriptions are looked for.
    pub sweep_every: Duration,
    /// The notifications' `wsa:Action` when the publish request names none.
    pub default_action: String,
    /// Told of each notification a sink took (for benchmarks); `None` normally.
    pub delivered: Option<DeliveryProbe>,
    /// Notifications to subscribers that asked for gzip are compressed from this size (in
    /// bytes) on; smaller ones are sent plain.
    pub compress_min_bytes: usize,
    /// Where notifications and SubscriptionEnd may go (service keys `notify_allow`,
    /// `notify_schemes`); the default refuses loopback, link-local and the server itself.
    pub notify_policy: DeliveryPolicy,
    /// Most subscriptions held at once for one subscriber identity (the client's address
    /// until a wsse identity is known; service key `max_subscriptions_per_identity`).
    pub max_subscriptions_per_identity: usize,
    /// Most node visits one XPath filter evaluation may make (service key
    /// `filter_budget`): an event needing more is not taken; a filter needing more on the
    /// worst-case event checked at Subscribe is refused.
    pub filter_budget: u64,
    /// Most bytes of notifications one sink holds (queued or being delivered); beyond it
    /// new ones are dropped for that sink (an empty sink takes one of any size).
    pub sink_queue_bytes: u64,
    /// Most bytes of events the source holds for its sinks, each event counted once
    /// however many sinks it waits for; a publish beyond it is refused with
    /// `PublishQueueFull`.
    pub queue_bytes_total: u64,
    /// Shortest time between two writes to one sink (service key `delivery_wait_ms`):
    /// notifications taken sooner after a write are held back until this long after it and
    /// go out together with what came meanwhile; a batch of 64 goes at once. Zero (the
    /// default) writes each batch at once. At high event rates a millisecond takes a tenth
    /// of the publisher's CPU per notification away, for up to a millisecond (and the
    /// timer's tick) more latency; events further apart than this never wait.
    pub delivery_wait: Duration,
}

/// The default of [`SourceSettings::max_subscriptions_per_identity`].
pub const DEFAULT_MAX_SUBSCRIPTIONS_PER_IDENTITY: usize = 100;

impl SourceSettings {
    /// The defaults, with delivery to loopback sinks allowed
    /// ([`DeliveryPolicy::allow_loopback`]): for tests and benchmarks whose sinks run on
    /// this machine.
    pub fn allowing_loopback() -> Self {
        SourceSettings {
            notify_policy: DeliveryPolicy::allow_loopback(),
            ..SourceSettings::default()
        }
    }
}

/// The default [`SourceSettings::sink_queue_bytes`]: 8 MiB.
pub const DEFAULT_SINK_QUEUE_BYTES: u64 = 8 * 1024 * 1024;
/// The default [`SourceSettings::queue_bytes_total`]: 256 MiB.
pub const DEFAULT_QUEUE_BYTES_TOTAL: u64 = 256 * 1024 * 1024;

impl Default for SourceSettings {
    fn default() -> Self {
        SourceSettings {
            store: None,
            max_expires: Duration::from_secs(3600),
            max_subscriptions: 10_000,
            queue_capacity: 1024,
            retry: RetryPolicy::default(),
            sweep_every: Duration::from_millis(100),
            default_action: DEFAULT_EVENT_ACTION.to_owned(),
            delivered: None,
            compress_min_bytes: crate::DEFAULT_COMPRESS_MIN_BYTES,
            notify_policy: DeliveryPolicy::default(),
            max_subscriptions_per_identity: DEFAULT_MAX_SUBSCRIPTIONS_PER_IDENTITY,
            filter_budget: crate::protocol::xpath::DEFAULT_FILTER_BUDGET,
            sink_queue_bytes: DEFAULT_SINK_QUEUE_BYTES,
            queue_bytes_total: DEFAULT_QUEUE_BYTES_TOTAL,
            delivery_wait: Duration::ZERO,
        }
    }
}
