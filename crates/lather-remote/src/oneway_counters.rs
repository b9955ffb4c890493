//! What a oneway remote handler counts (shown on `/metrics`).

use std::sync::atomic::AtomicU64;

/// What a oneway remote handler counted since start (shown on `/metrics`).
#[derive(Debug, Default)]
pub struct OnewayCounters {
    /// Messages JetStream acknowledged (stored in the work-queue stream, or recognised as a
    /// duplicate of one stored).
    pub published: AtomicU64,
    /// Messages that could not be handed over (NATS down, stream full, no acknowledgement
    /// in time) and went to the fallback.
    pub failed: AtomicU64,
    /// JetStream messages that carried several hand-offs (`[nats] batch_max_items`).
    pub batches: AtomicU64,
    /// Hand-offs that went in such a message.
    pub batched: AtomicU64,
}
