//! The adaptive timeout of a remote handler whose `timeout_ms` is not set: ten times the
//! 99th percentile of its recent calls, at least 100 ms, once 100 calls are measured.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Calls measured before the adaptive timeout replaces the configured one.
pub const ADAPTIVE_AFTER_CALLS: u64 = 100;
/// The adaptive timeout is this many times the measured 99th percentile…
pub const ADAPTIVE_FACTOR: u32 = 10;
/// …and never less than this.
pub const ADAPTIVE_FLOOR: Duration = Duration::from_millis(100);
/// How many recent calls the percentile is taken over.
const WINDOW: usize = 1024;
/// The percentile is recomputed every this many calls (selected in a copy of the window).
const RECOMPUTE_EVERY: u64 = 32;

/// The most recent calls' times and their 99th percentile.
#[derive(Debug, Default)]
pub(crate) struct Latencies {
    window: Mutex<Vec<u64>>,
    calls: AtomicU64,
    /// The last computed 99th percentile in microseconds; 0 before [`ADAPTIVE_AFTER_CALLS`].
    p99_us: AtomicU64,
}

impl Latencies {
    /// Adds one call's time (an answered call's round trip; a timed-out call counts as
    /// its timeout, so a handler that became slower raises its own timeout instead of
    /// timing out for ever).
    pub(crate) fn record(&self, took: Duration) {
        let us = u64::try_from(took.as_micros()).unwrap_or(u64::MAX);
        let n = self.calls.fetch_add(1, Ordering::Relaxed) + 1;
        let Ok(mut window) = self.window.lock() else {
            return;
        };
        if window.len() < WINDOW {
            window.push(us);
        } else {
            let slot = usize::try_from(n % WINDOW as u64).unwrap_or(0);
            window[slot] = us;
        }
        if n >= ADAPTIVE_AFTER_CALLS
            && (n == ADAPTIVE_AFTER_CALLS || n.is_multiple_of(RECOMPUTE_EVERY))
        {
            let mut recent = window.clone();
            drop(window);
            // The value a full sort would put at `at`, found without sorting the rest.
            let at = (recent.len() * 99).div_ceil(100).saturating_sub(1);
            let (_, p99, _) = recent.select_nth_unstable(at);
            self.p99_us.store((*p99).max(1), Ordering::Relaxed);
        }
    }

    /// The 99th percentile, once [`ADAPTIVE_AFTER_CALLS`] calls were measured.
    pub(crate) fn p99(&self) -> Option<Duration> {
        match self.p99_us.load(Ordering::Relaxed) {
            0 => None,
            us => Some(Duration::from_micros(us)),
        }
    }

    /// The timeout a call gets: `configured` until [`ADAPTIVE_AFTER_CALLS`] calls were
    /// measured, then `max(ADAPTIVE_FLOOR, ADAPTIVE_FACTOR × p99)`, never above
    /// `configured`.
    pub(crate) fn timeout(&self, configured: Duration) -> Duration {
        match self.p99() {
            None => configured,
            Some(p99) => p99
                .saturating_mul(ADAPTIVE_FACTOR)
                .max(ADAPTIVE_FLOOR)
                .min(configured),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_configured_timeout_holds_until_100_calls_then_ten_times_p99_with_a_floor() {
        let l = Latencies::default();
        let configured = Duration::from_secs(30);
        for _ in 0..99 {
            l.record(Duration::from_millis(50));
        }
        assert_eq!(l.timeout(configured), configured);
        l.record(Duration::from_millis(50));
        assert_eq!(l.timeout(configured), Duration::from_millis(500));
        // Fast calls: the floor.
        let fast = Latencies::default();
        for _ in 0..200 {
            fast.record(Duration::from_micros(300));
        }
        assert_eq!(fast.timeout(configured), ADAPTIVE_FLOOR);
        // Never above the configured timeout.
        assert_eq!(
            l.timeout(Duration::from_millis(200)),
            Duration::from_millis(200)
        );
    }

    #[test]
    fn the_percentile_follows_the_slowest_percent_and_recent_calls() {
        let l = Latencies::default();
        for i in 0..1024_u64 {
            let ms = if i % 200 == 0 { 40 } else { 1 };
            l.record(Duration::from_millis(ms));
        }
        // 6 of 1024 calls at 40 ms: the 99th percentile is a fast call's time.
        assert_eq!(l.p99(), Some(Duration::from_millis(1)));
        for _ in 0..100 {
            l.record(Duration::from_millis(40));
        }
        assert_eq!(l.p99(), Some(Duration::from_millis(40)));
        // A whole window of slower calls later, the old ones are forgotten.
        for _ in 0..WINDOW {
            l.record(Duration::from_millis(7));
        }
        assert_eq!(l.p99(), Some(Duration::from_millis(7)));
    }
}
