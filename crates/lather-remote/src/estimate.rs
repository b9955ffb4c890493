//! A moving estimate of how long one call takes, for choosing where to run the next.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// How much a new sample moves the estimate: 1/`WEIGHT_INVERSE` (1/8). Eight calls or so
/// carry the estimate most of the way to a new level, so it follows a change of load
/// within a few dozen calls of that side yet one slow call does not swing it.
pub const WEIGHT_INVERSE: u64 = 8;

/// An exponentially weighted moving average of call times (weight 1/8 per new sample);
/// unknown until the first sample.
#[derive(Debug, Default)]
pub struct Estimate {
    /// Nanoseconds; 0 until the first sample.
    average_ns: AtomicU64,
}

impl Estimate {
    /// Adds one measured call. Concurrent updates may lose one another's sample; the
    /// estimate stays an average of samples.
    pub fn record(&self, took: Duration) {
        let sample = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX).max(1);
        let old = self.average_ns.load(Ordering::Relaxed);
        let new = if old == 0 {
            sample
        } else {
            old - old / WEIGHT_INVERSE + sample / WEIGHT_INVERSE
        };
        self.average_ns.store(new.max(1), Ordering::Relaxed);
    }

    /// The estimate; `None` before the first sample.
    pub fn get(&self) -> Option<Duration> {
        match self.average_ns.load(Ordering::Relaxed) {
            0 => None,
            ns => Some(Duration::from_nanos(ns)),
        }
    }

    /// The estimate in whole microseconds, 0 before the first sample (for `/metrics`).
    pub fn micros(&self) -> u64 {
        self.average_ns.load(Ordering::Relaxed) / 1000
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_sample_sets_it_and_later_ones_move_it_by_an_eighth() {
        let e = Estimate::default();
        assert_eq!(e.get(), None);
        assert_eq!(e.micros(), 0);
        e.record(Duration::from_micros(800));
        assert_eq!(e.get(), Some(Duration::from_micros(800)));
        e.record(Duration::from_micros(0));
        // 800 - 800/8 + 0/8 (a zero sample counts as 1 ns, which 1/8 rounds away).
        assert_eq!(e.get(), Some(Duration::from_micros(700)));
        for _ in 0..64 {
            e.record(Duration::from_micros(40));
        }
        let settled = e.micros();
        assert!((40..=41).contains(&settled), "{settled}");
    }
}
