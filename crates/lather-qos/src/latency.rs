//! A service's response times over the last second, for offers whose price follows p99:
//! lock-free counters in buckets a quarter-octave wide (from 50 µs to about 3 minutes),
//! taken and cleared once a second.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

const BUCKETS: usize = 88;
/// The upper bound of bucket 0, in microseconds.
const FIRST_US: f64 = 50.0;

/// Response-time counters.
#[derive(Debug)]
pub struct LatencyWindow {
    counts: [AtomicU64; BUCKETS],
}

impl Default for LatencyWindow {
    fn default() -> Self {
        LatencyWindow {
            counts: std::array::from_fn(|_| AtomicU64::new(0)),
        }
    }
}

/// The upper bound of bucket `i`, in microseconds.
fn bound_us(i: usize) -> f64 {
    FIRST_US * 2f64.powf(i as f64 / 4.0)
}

impl LatencyWindow {
    /// Counts one response time (two float operations and one atomic add).
    pub fn record(&self, took: Duration) {
        let us = took.as_secs_f64() * 1e6;
        let i = if us <= FIRST_US {
            0
        } else {
            ((us / FIRST_US).log2() * 4.0).ceil() as usize
        };
        self.counts[i.min(BUCKETS - 1)].fetch_add(1, Ordering::Relaxed);
    }

    /// The 99th percentile of the times counted since the last call, in milliseconds (the
    /// bound of its bucket; 0 when nothing was counted), and the counters cleared.
    pub fn take_p99_ms(&self) -> f64 {
        let counts: Vec<u64> = self
            .counts
            .iter()
            .map(|c| c.swap(0, Ordering::Relaxed))
            .collect();
        let total: u64 = counts.iter().sum();
        if total == 0 {
            return 0.0;
        }
        let rank = total - total / 100;
        let mut seen = 0;
        for (i, n) in counts.iter().enumerate() {
            seen += n;
            if seen >= rank {
                return bound_us(i) / 1000.0;
            }
        }
        bound_us(BUCKETS - 1) / 1000.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_p99_is_within_a_quarter_octave_and_each_take_starts_afresh() {
        let w = LatencyWindow::default();
        for _ in 0..990 {
            w.record(Duration::from_millis(2));
        }
        for _ in 0..10 {
            w.record(Duration::from_millis(100));
        }
        let p99 = w.take_p99_ms();
        assert!((2.0..2.0 * 1.19).contains(&p99), "{p99}");
        for _ in 0..20 {
            w.record(Duration::from_millis(100));
        }
        let p99 = w.take_p99_ms();
        assert!((100.0..119.0).contains(&p99), "{p99}");
        assert_eq!(w.take_p99_ms(), 0.0);
        w.record(Duration::from_secs(100_000));
        assert!(w.take_p99_ms() > 100_000.0);
    }
}
