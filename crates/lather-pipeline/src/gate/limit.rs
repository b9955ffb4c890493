//! The in-flight limit: fixed, or adapted to measured latency (additive increase,
//! multiplicative decrease), like TCP's congestion window.
//!
//! Past a break-even concurrency, admitting more messages only makes every message slower.
//! The adaptive limit finds that point from the latencies it is fed: while latency stays
//! near the best seen recently, a saturated window grows by about one per window's worth of
//! completions; when latency rises past `tolerance` × that baseline, the window shrinks by
//! `backoff`. The baseline slowly forgets, so a change in the service is learnt.

use std::time::Duration;

/// How the in-flight limit is set.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LimitPolicy {
    /// Exactly this many messages in flight.
    Fixed(usize),
    /// Adapted to latency between `min` and `max`, starting at `initial`.
    Adaptive {
        /// Lower bound.
        min: usize,
        /// Upper bound.
        max: usize,
        /// Starting limit.
        initial: usize,
        /// Latency above `tolerance` × baseline counts as congestion (e.g. 2.0).
        tolerance: f64,
        /// Factor applied on congestion (e.g. 0.9).
        backoff: f64,
    },
}

impl LimitPolicy {
    /// The default adaptive policy: 1…1024 in flight, starting at 32, tolerance 2×, backoff 0.9.
    pub fn adaptive() -> Self {
        LimitPolicy::Adaptive {
            min: 1,
            max: 1024,
            initial: 32,
            tolerance: 2.0,
            backoff: 0.9,
        }
    }
}

/// The current limit and what it learnt.
#[derive(Debug, Clone)]
pub(crate) struct Limit {
    policy: LimitPolicy,
    /// The limit as a real number, so additive increase can be fractional.
    value: f64,
    /// The best latency seen, slowly forgotten (in seconds).
    baseline: Option<f64>,
}

/// How much the baseline drifts up towards each sample (forgetting old minima).
const BASELINE_DRIFT: f64 = 0.001;

impl Limit {
    pub(crate) fn new(policy: LimitPolicy) -> Self {
        let value = match policy {
            LimitPolicy::Fixed(n) => n.max(1) as f64,
            LimitPolicy::Adaptive {
                min, max, initial, ..
            } => initial.clamp(min.max(1), max.max(1)) as f64,
        };
        Limit {
            policy,
            value,
            baseline: None,
        }
    }

    /// The limit now.
    pub(crate) fn current(&self) -> usize {
        self.value as usize
    }

    /// Learns from one completed message: its latency, and how many were in flight when it
    /// was admitted (a window that was not full says nothing about a larger one).
    pub(crate) fn observe(&mut self, latency: Duration, in_flight: usize) {
        let LimitPolicy::Adaptive {
            min,
            max,
            tolerance,
            backoff,
            ..
        } = self.policy
        else {
            return;
        };
        let sample = latency.as_secs_f64();
        let baseline = match self.baseline {
            None => sample,
            Some(b) if sample < b => sample,
            Some(b) => b + (sample - b) * BASELINE_DRIFT,
        };
        self.baseline = Some(baseline);
        if sample > baseline * tolerance {
            self.value = (self.value * backoff).max(min.max(1) as f64);
        } else if in_flight + 1 >= self.current() {
            self.value = (self.value + 1.0 / self.value).min(max.max(1) as f64);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn a_fixed_limit_never_moves() {
        let mut l = Limit::new(LimitPolicy::Fixed(8));
        for _ in 0..1000 {
            l.observe(ms(500), 8);
        }
        assert_eq!(l.current(), 8);
    }

    #[test]
    fn a_saturated_window_with_steady_latency_grows_about_one_per_window() {
        let mut l = Limit::new(LimitPolicy::adaptive());
        assert_eq!(l.current(), 32);
        // A window's worth of completions at the limit (a few more, as each step is
        // 1/limit of a growing limit), latency flat: +1.
        for _ in 0..40 {
            let in_flight = l.current();
            l.observe(ms(10), in_flight);
        }
        assert_eq!(l.current(), 33);
        // A window that is not full does not grow.
        for _ in 0..1000 {
            l.observe(ms(10), 3);
        }
        assert_eq!(l.current(), 33);
    }

    #[test]
    fn rising_latency_shrinks_the_window_down_to_the_minimum() {
        let mut l = Limit::new(LimitPolicy::adaptive());
        l.observe(ms(10), 32);
        l.observe(ms(25), 32);
        assert_eq!(l.current(), 28, "32 × 0.9 = 28.8");
        for _ in 0..200 {
            l.observe(ms(100), 1);
        }
        assert_eq!(l.current(), 1);
    }

    #[test]
    fn a_congested_then_recovered_service_is_learnt_back() {
        let mut l = Limit::new(LimitPolicy::adaptive());
        for _ in 0..20 {
            l.observe(ms(10), 32);
            l.observe(ms(50), 32);
        }
        let low = l.current();
        for _ in 0..2000 {
            let in_flight = l.current();
            l.observe(ms(10), in_flight);
        }
        assert!(l.current() > low + 20, "{low} → {}", l.current());
    }
}
