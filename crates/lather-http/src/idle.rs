//! Idle connections: a connection that moves no byte for `idle_timeout_ms` while none of
//! its requests is being handled is closed — from accept on, not from its first byte.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// What one connection did lately: when a byte last moved, and how many of its requests
/// are being handled.
#[derive(Debug)]
pub(crate) struct Activity {
    start: Instant,
    /// Milliseconds from `start` to the last byte read or written.
    last_ms: AtomicU64,
    busy: AtomicUsize,
}

impl Activity {
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(Activity {
            start: Instant::now(),
            last_ms: AtomicU64::new(0),
            busy: AtomicUsize::new(0),
        })
    }

    fn touch(&self) {
        let ms = u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last_ms.store(ms, Ordering::Relaxed);
    }

    fn quiet_for(&self) -> Duration {
        let last = Duration::from_millis(self.last_ms.load(Ordering::Relaxed));
        self.start.elapsed().saturating_sub(last)
    }

    /// Marks one request as being handled until the guard drops.
    pub(crate) fn busy(self: &Arc<Self>) -> Busy {
        self.busy.fetch_add(1, Ordering::Relaxed);
        Busy(self.clone())
    }

    /// Completes once the connection has been idle for `limit`: no byte moved and no
    /// request handled for that long.
    pub(crate) async fn idle_for(&self, limit: Duration) {
        loop {
            let quiet = self.quiet_for();
            if quiet >= limit && self.busy.load(Ordering::Relaxed) == 0 {
                return;
            }
            let wait = limit.checked_sub(quiet).unwrap_or(limit);
            tokio::time::sleep(wait.max(Duration::from_millis(1))).await;
        }
    }
}

/// A request being handled; the connection is not idle while one lives.
#[derive(Debug)]
pub(crate) struct Busy(Arc<Activity>);

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.touch();
        self.0.busy.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Any byte moved is activity.
impl crate::watched::Traffic for Activity {
    fn read(&self, _: usize) {
        self.touch();
    }

    fn written(&self, _: usize) {
        self.touch();
    }
}
