//! What a handler's call costs, learned as it runs: the engine keeps CPU-bound handlers
//! whose calls are short on the message's task, since handing them to the CPU pool and
//! back would cost more than the work itself.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// A moving average of a handler's call time: exponentially weighted, each new call
/// weighing 1/8, so eight calls or so carry it most of the way to a new level while one
/// slow call does not swing it; unknown until the first call. The engine keeps one per
/// step; automatic placement keeps one per side.
#[derive(Debug, Default)]
pub struct Cost {
    /// Nanoseconds; 0 until the first call is measured.
    average_ns: AtomicU64,
}

impl Cost {
    /// Adds one measured call. Concurrent updates may lose one another's sample; the
    /// average stays an average.
    pub fn record(&self, took: Duration) {
        let sample = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX).max(1);
        let old = self.average_ns.load(Ordering::Relaxed);
        let new = if old == 0 {
            sample
        } else {
            old - old / 8 + sample / 8
        };
        self.average_ns.store(new.max(1), Ordering::Relaxed);
    }

    /// The average so far; `None` before the first call.
    pub fn average(&self) -> Option<Duration> {
        match self.average_ns.load(Ordering::Relaxed) {
            0 => None,
            ns => Some(Duration::from_nanos(ns)),
        }
    }

    /// The average in whole microseconds, 0 before the first call (for `/metrics`).
    pub fn micros(&self) -> u64 {
        self.average_ns.load(Ordering::Relaxed) / 1000
    }

    /// Whether a call is cheap enough to run inline: measured, and below `threshold`.
    pub(crate) fn is_below(&self, threshold: Duration) -> bool {
        self.average().is_some_and(|a| a < threshold)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_average_follows_the_calls_and_starts_unknown() {
        let cost = Cost::default();
        assert_eq!(cost.average(), None);
        assert!(
            !cost.is_below(Duration::from_secs(1)),
            "unknown is not cheap"
        );
        cost.record(Duration::from_micros(800));
        assert_eq!(cost.average(), Some(Duration::from_micros(800)));
        for _ in 0..64 {
            cost.record(Duration::from_micros(10));
        }
        let settled = cost.average().unwrap();
        assert!(settled < Duration::from_micros(12), "{settled:?}");
        assert!(cost.is_below(Duration::from_micros(50)));
        assert!(!cost.is_below(Duration::from_micros(5)));
    }

    #[test]
    fn the_first_sample_sets_it_and_later_ones_move_it_by_an_eighth() {
        let e = Cost::default();
        assert_eq!(e.average(), None);
        assert_eq!(e.micros(), 0);
        e.record(Duration::from_micros(800));
        assert_eq!(e.average(), Some(Duration::from_micros(800)));
        e.record(Duration::from_micros(0));
        // 800 - 800/8 + 0/8 (a zero sample counts as 1 ns, which 1/8 rounds away).
        assert_eq!(e.average(), Some(Duration::from_micros(700)));
        for _ in 0..64 {
            e.record(Duration::from_micros(40));
        }
        let settled = e.micros();
        assert!((40..=41).contains(&settled), "{settled}");
    }
}
