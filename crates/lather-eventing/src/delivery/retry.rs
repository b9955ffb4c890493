//! How hard delivery tries, and the probe told of every notification going out.

use std::sync::Arc;
use std::time::Duration;

/// How hard delivery tries before it gives a sink up: `attempts` failed connections in
/// a row (HTTP: without an answer in between; TCP bindings: see
/// `binding::tcp::StreamSink`), waiting `first_backoff`, then twice as long each time,
/// between them; then the subscription ends with DeliveryFailure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Failed connections in a row before the sink is given up (at least 1).
    pub attempts: u32,
    /// Wait before the second attempt; doubled before each further one.
    pub first_backoff: Duration,
    /// Longest wait for one write to the sink, for a connection, and for an answer
    /// (service key `sink_write_timeout_ms`).
    pub timeout: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            attempts: 4,
            first_backoff: Duration::from_millis(100),
            timeout: Duration::from_secs(10),
        }
    }
}

/// Told of every notification as its bytes go out: the subscription id, the event's
/// sequence number, its publish time and the time its bytes were ready and handed to the
/// connection (Unix ns; before the POST or the write). For measurements: the difference is
/// the publisher's share of the latency (queueing and rendering).
#[derive(Clone)]
pub struct DeliveryProbe(pub Arc<ProbeFn>);

/// The probe's function: (subscription id, sequence number, published ns, ready ns).
pub type ProbeFn = dyn Fn(&str, u64, u64, u64) + Send + Sync;

impl std::fmt::Debug for DeliveryProbe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DeliveryProbe")
    }
}
