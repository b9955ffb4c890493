//! What a source's delivery holds now, counted as it changes: the bytes of the events
//! queued (each event once, however many sinks it waits for — sinks share it), the
//! delivery tasks alive, and the notifications dropped or refused (each sink's own counts
//! are its queue's: `crate::delivery::sink_queue`).
//! The bounds on bytes are checked against these counts (`crate::source::Inner::deliver`).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// A source's counts.
#[derive(Debug, Default)]
pub(crate) struct Gauges {
    /// Bytes of the events some sink still holds (each event counted once).
    queued_bytes: AtomicU64,
    /// Delivery tasks running.
    tasks: AtomicUsize,
    /// Notifications dropped for one sink (its queue full, by count or by bytes).
    pub(crate) dropped: AtomicU64,
    /// Publishes refused because the source's byte bound was reached.
    pub(crate) refused: AtomicU64,
}

impl Gauges {
    /// Bytes of the events some sink still holds.
    pub(crate) fn queued_bytes(&self) -> u64 {
        self.queued_bytes.load(Ordering::Relaxed)
    }

    /// Delivery tasks running.
    pub(crate) fn tasks(&self) -> usize {
        self.tasks.load(Ordering::Relaxed)
    }

    /// Counts `bytes` as queued until the returned charge is dropped.
    pub(crate) fn charge(self: &Arc<Self>, bytes: u64) -> Charge {
        self.queued_bytes.fetch_add(bytes, Ordering::Relaxed);
        Charge {
            gauges: Arc::clone(self),
            bytes,
        }
    }

    /// Counts a delivery task as running until the returned guard is dropped.
    pub(crate) fn task(self: &Arc<Self>) -> TaskGuard {
        self.tasks.fetch_add(1, Ordering::Relaxed);
        TaskGuard(Arc::clone(self))
    }
}

/// An event's bytes counted in its source's [`Gauges`] while the event lives.
#[derive(Debug)]
pub(crate) struct Charge {
    gauges: Arc<Gauges>,
    bytes: u64,
}

impl Drop for Charge {
    fn drop(&mut self) {
        self.gauges
            .queued_bytes
            .fetch_sub(self.bytes, Ordering::Relaxed);
    }
}

/// A running delivery task, counted while it lives.
#[derive(Debug)]
pub(crate) struct TaskGuard(Arc<Gauges>);

impl Drop for TaskGuard {
    fn drop(&mut self) {
        self.0.tasks.fetch_sub(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charges_and_tasks_are_given_back_when_dropped() {
        let gauges = Arc::new(Gauges::default());
        let a = gauges.charge(10);
        let b = gauges.charge(5);
        assert_eq!(gauges.queued_bytes(), 15);
        drop(a);
        assert_eq!(gauges.queued_bytes(), 5);
        drop(b);
        assert_eq!(gauges.queued_bytes(), 0);

        let task = gauges.task();
        assert_eq!(gauges.tasks(), 1);
        drop(task);
        assert_eq!(gauges.tasks(), 0);
    }
}
