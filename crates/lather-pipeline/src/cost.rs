//! What a handler's call costs, learned as it runs: the engine keeps CPU-bound handlers
//! whose calls are short on the message's task, since handing them to the CPU pool and
//! back would cost more than the work itself.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Environment variable: CPU-bound handlers whose calls take less than this many
/// microseconds on average run inline instead of on the CPU pool (default 50; 0 sends every
/// CPU-bound call to the pool).
pub const CPU_INLINE_VAR: &str = "LATHER_CPU_INLINE_MICROS";

const DEFAULT_INLINE: Duration = Duration::from_micros(50);

/// The threshold below which a CPU-bound handler runs inline.
pub(crate) fn inline_below() -> Duration {
    static THRESHOLD: OnceLock<Duration> = OnceLock::new();
    *THRESHOLD.get_or_init(|| {
        std::env::var(CPU_INLINE_VAR)
            .ok()
            .and_then(|v| v.parse::<u64>().ok())
            .map_or(DEFAULT_INLINE, Duration::from_micros)
    })
}

/// A moving average of a handler's call time (weight 1/8 for each new call).
#[derive(Debug, Default)]
pub(crate) struct Cost {
    /// Nanoseconds; 0 until the first call is measured.
    average_ns: AtomicU64,
}

impl Cost {
    /// Adds one measured call. Concurrent updates may lose one another's sample; the
    /// average stays an average.
    pub(crate) fn record(&self, took: Duration) {
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
    pub(crate) fn average(&self) -> Option<Duration> {
        match self.average_ns.load(Ordering::Relaxed) {
            0 => None,
            ns => Some(Duration::from_nanos(ns)),
        }
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
}
