//! A sink's queue: notifications wait here for the sink's delivery task, bounded by count
//! (`queue_capacity`) and by bytes (`sink_queue_bytes`); beyond either a notification is
//! dropped for that sink alone (logged and counted). Every queued notification shares its
//! event (an `Arc`) with the other sinks' queues and holds its bytes in the sink's count
//! until the delivery task lets it go (answered, written, or the task ended).

use crate::delivery::gauges::{Gauges, SinkBytes, SinkShare};
use crate::delivery::stamped::Stamped;
use std::sync::Arc;
use tokio::sync::mpsc;

/// One notification in a sink's queue or delivery: the shared event and the sink's share
/// of its bytes.
#[derive(Debug)]
pub(crate) struct Queued {
    event: Arc<Stamped>,
    _share: SinkShare,
}

impl Queued {
    /// The shared event.
    pub(crate) fn event(&self) -> &Arc<Stamped> {
        &self.event
    }
}

impl std::ops::Deref for Queued {
    type Target = Stamped;

    fn deref(&self) -> &Stamped {
        &self.event
    }
}

/// The sending side of a sink's queue.
#[derive(Debug, Clone)]
pub(crate) struct SinkQueue {
    sender: mpsc::Sender<Queued>,
    bytes: Arc<SinkBytes>,
    /// Most bytes the sink holds (`sink_queue_bytes`).
    limit: u64,
    gauges: Arc<Gauges>,
}

/// The receiving side, for the delivery task.
pub(crate) type SinkReceiver = mpsc::Receiver<Queued>;

impl SinkQueue {
    /// A queue of at most `capacity` notifications and `limit` bytes; drops are counted in
    /// `gauges`.
    pub(crate) fn new(
        capacity: usize,
        limit: u64,
        gauges: Arc<Gauges>,
    ) -> (SinkQueue, SinkReceiver) {
        let (sender, receiver) = mpsc::channel(capacity.max(1));
        let queue = SinkQueue {
            sender,
            bytes: Arc::new(SinkBytes::default()),
            limit,
            gauges,
        };
        (queue, receiver)
    }

    /// Queues `event` for subscription `id`'s sink; a full queue (by count or bytes) drops
    /// it with a warning. Whether it was queued.
    pub(crate) fn offer(&self, id: &str, event: &Arc<Stamped>) -> bool {
        let Some(share) = self.bytes.take(event.size(), self.limit) else {
            self.dropped(id, "its bytes");
            return false;
        };
        let queued = Queued {
            event: Arc::clone(event),
            _share: share,
        };
        match self.sender.try_send(queued) {
            Ok(()) => true,
            Err(_) => {
                self.dropped(id, "its count");
                false
            }
        }
    }

    /// Notifications the sink holds now: queued, or taken by its delivery task and not
    /// yet delivered.
    pub(crate) fn held(&self) -> usize {
        self.bytes.notifications()
    }

    /// Bytes the sink holds now: its queue and the notification being delivered.
    pub(crate) fn bytes(&self) -> u64 {
        self.bytes.held()
    }

    fn dropped(&self, id: &str, bound: &str) {
        self.gauges
            .dropped
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        tracing::warn!(subscription = %id, "sink queue full ({bound}): event dropped");
    }
}
