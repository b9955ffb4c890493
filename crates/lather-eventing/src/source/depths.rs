//! How full a source's sinks are now: subscriptions held, notifications queued in all, and
//! the fullest sink by count and by bytes — figures whose size does not grow with the
//! number of subscribers, for `/metrics`.

use super::EventSource;

/// A source's sinks at one moment ([`EventSource::sink_depths`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SinkDepths {
    /// Subscriptions this source holds (each with its sink queue and delivery task).
    pub subscriptions: usize,
    /// Notifications the sinks hold — queued, or taken by a delivery task and not yet
    /// delivered — all sinks together (one event held for three sinks counts three times).
    pub queued_notifications: usize,
    /// The most notifications one sink holds (queued or being delivered).
    pub largest_sink_notifications: usize,
    /// The most bytes one sink holds (queued or being written), the figure bounded by
    /// `sink_queue_bytes`.
    pub largest_sink_bytes: u64,
}

impl EventSource {
    /// The sinks' depths now, read under the subscriptions' lock (one pass over them).
    pub fn sink_depths(&self) -> SinkDepths {
        let active = self.inner.lock();
        let mut depths = SinkDepths {
            subscriptions: active.len(),
            ..SinkDepths::default()
        };
        for a in active.values() {
            let (queued, bytes) = a.queue.held_and_bytes();
            depths.queued_notifications += queued;
            depths.largest_sink_notifications = depths.largest_sink_notifications.max(queued);
            depths.largest_sink_bytes = depths.largest_sink_bytes.max(bytes);
        }
        depths
    }
}
