//! The in-flight limit: fixed, or adapted to measured latency (a gradient limit, in the
//! manner of TCP Vegas).
//!
//! Past a break-even concurrency, admitting more messages only makes every message slower.
//! The adaptive limit finds that point by comparing, once per window of completions (at
//! least [`MIN_WINDOW`], at least the limit), two latencies:
//!
//! - **recent**: the window's 90th percentile ([`PERCENTILE`]) — a few outliers in a window
//!   do not move it, a slower service does;
//! - **baseline**: the lowest recent latency seen, which rises only slowly, and only from
//!   windows where the gate was not the bottleneck (a window that was not saturated: then
//!   the latency is the service's own, not one inflated by a queue the limit let build up);
//!   under saturation it rises at most [`SATURATED_RISE`] per window.
//!
//! The gradient `TOLERANCE × baseline / recent`, clamped to `[0.5, 1]`, says how far the
//! service is past its break-even: 1 while recent latency stays within [`TOLERANCE`] × the
//! baseline (jitter), lower as latency grows with the limit. Each window the limit moves
//! [`SMOOTHING`] of the way towards `limit × gradient + allowance`, where the queue
//! allowance is √limit at gradient 1 (it lets a healthy, saturated limit grow) and fades
//! to 0 at gradient 0.5 (so heavy congestion halves the target); a window that was not
//! saturated never raises it. The limit stays within `[min, max]`: the floor `min` means neither
//! jitter, nor an outage, nor slow clients can starve a service.
//!
//! The gate feeds the limit the time from admission to the service's answer only: reading
//! a request body and writing the answer to the client happen outside the permit.

use super::window::Window;
use std::time::Duration;

/// How the in-flight limit is set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitPolicy {
    /// Exactly this many messages in flight.
    Fixed(usize),
    /// Adapted to latency between `min` and `max`, starting at `initial`.
    Adaptive {
        /// The floor: the limit never falls below it (at least 1).
        min: usize,
        /// The ceiling.
        max: usize,
        /// Starting limit (clamped to `[min, max]`).
        initial: usize,
    },
}

impl LimitPolicy {
    /// The default floor of the adaptive limit.
    pub const DEFAULT_MIN: usize = 4;
    /// The default ceiling of the adaptive limit.
    pub const DEFAULT_MAX: usize = 1024;
    /// The default starting point of the adaptive limit.
    pub const DEFAULT_INITIAL: usize = 32;

    /// The default adaptive policy: 4…1024 in flight, starting at 32.
    pub fn adaptive() -> Self {
        Self::adaptive_with_floor(Self::DEFAULT_MIN)
    }

    /// The default adaptive policy with the floor `min` (the ceiling rises to `min` if
    /// needed).
    pub fn adaptive_with_floor(min: usize) -> Self {
        let min = min.max(1);
        LimitPolicy::Adaptive {
            min,
            max: Self::DEFAULT_MAX.max(min),
            initial: Self::DEFAULT_INITIAL,
        }
    }
}

/// Fewest completions per window.
pub(crate) const MIN_WINDOW: usize = 32;
/// The latency percentile a window is summarised by.
pub(crate) const PERCENTILE: f64 = 0.9;
/// Recent latency up to this multiple of the baseline counts as jitter, not congestion.
pub(crate) const TOLERANCE: f64 = 1.5;
/// The share of the way the limit moves towards its target each window.
pub(crate) const SMOOTHING: f64 = 0.2;
/// The lowest gradient: one window cuts the target at most in half.
const MIN_GRADIENT: f64 = 0.5;
/// How much the baseline may rise per window that was not saturated (the service itself
/// got slower: learnt within tens of windows).
pub(crate) const UNSATURATED_RISE: f64 = 0.05;
/// How much the baseline may rise per saturated window: nothing, so a limit set too high
/// cannot teach itself that the queue it built is normal.
pub(crate) const SATURATED_RISE: f64 = 0.0;

/// The current limit and what it learnt.
#[derive(Debug, Clone)]
pub(crate) struct Limit {
    policy: LimitPolicy,
    /// The limit as a real number, so small steps add up.
    value: f64,
    /// The latencies since the last update.
    window: Window,
    /// The service's latency when not queued behind itself (seconds), once learnt.
    baseline: Option<f64>,
}

impl Limit {
    pub(crate) fn new(policy: LimitPolicy) -> Self {
        let value = match policy {
            LimitPolicy::Fixed(n) => n.max(1),
            LimitPolicy::Adaptive { min, max, initial } => {
                let min = min.max(1);
                initial.clamp(min, max.max(min))
            }
        };
        Limit {
            policy,
            value: value as f64,
            window: Window::default(),
            baseline: None,
        }
    }

    /// The limit now.
    pub(crate) fn current(&self) -> usize {
        self.value as usize
    }

    /// Learns from one completed message: its latency from admission to answer, and how
    /// many were in flight when it was admitted (itself included).
    pub(crate) fn observe(&mut self, latency: Duration, in_flight: usize) {
        let LimitPolicy::Adaptive { min, max, .. } = self.policy else {
            return;
        };
        let busy = in_flight * 2 >= self.current();
        self.window.push(latency.as_secs_f64(), busy);
        if self.window.len() < MIN_WINDOW.max(self.current()) {
            return;
        }
        let Some(summary) = self.window.take(PERCENTILE) else {
            return;
        };
        // A zero latency (a clock that did not move) would make every ratio meaningless.
        let recent = summary.latency.max(1e-9);
        let baseline = self.baseline.unwrap_or(recent);
        let gradient = (TOLERANCE * baseline / recent).clamp(MIN_GRADIENT, 1.0);
        if gradient < 1.0 || summary.saturated {
            // The queue allowance fades out as congestion grows: at the lowest gradient the
            // target is half the limit, so a limit can come down to any floor.
            let allowance = self.value.sqrt() * (gradient - MIN_GRADIENT) / (1.0 - MIN_GRADIENT);
            let target = self.value * gradient + allowance;
            let mut next = self.value + (target - self.value) * SMOOTHING;
            if !summary.saturated {
                next = next.min(self.value);
            }
            let min = min.max(1) as f64;
            self.value = next.clamp(min, (max as f64).max(min));
        }
        let rise = if summary.saturated {
            SATURATED_RISE
        } else {
            UNSATURATED_RISE
        };
        self.baseline = Some(recent.min(baseline * (1.0 + rise)));
    }
}

#[cfg(test)]
mod tests;
