//! One window of latency samples: what the adaptive limit learns from at a time.

/// The latencies (in seconds) of the messages completed since the last update, and how many
/// of them were admitted while the gate was busy (at least half the limit in flight).
#[derive(Debug, Clone, Default)]
pub(super) struct Window {
    samples: Vec<f64>,
    busy: usize,
}

/// What a full window says.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Summary {
    /// The window's latency percentile, in seconds.
    pub(super) latency: f64,
    /// At least half the window's messages were admitted while the gate was busy: the
    /// limit, not the offered load, decided how many were in flight.
    pub(super) saturated: bool,
}

impl Window {
    /// Adds one sample; `busy` says whether the gate was busy when it was admitted.
    pub(super) fn push(&mut self, latency: f64, busy: bool) {
        self.samples.push(latency);
        self.busy += usize::from(busy);
    }

    /// Samples in the window.
    pub(super) fn len(&self) -> usize {
        self.samples.len()
    }

    /// Summarises the window at `percentile` (0…1) and empties it; `None` when empty.
    pub(super) fn take(&mut self, percentile: f64) -> Option<Summary> {
        if self.samples.is_empty() {
            return None;
        }
        let n = self.samples.len();
        let at = ((percentile * n as f64) as usize).min(n - 1);
        let (_, latency, _) = self.samples.select_nth_unstable_by(at, f64::total_cmp);
        let summary = Summary {
            latency: *latency,
            saturated: self.busy * 2 >= n,
        };
        self.samples.clear();
        self.busy = 0;
        Some(summary)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_percentile_ignores_a_few_outliers_and_saturation_is_a_majority() {
        let mut w = Window::default();
        for i in 0..100 {
            let latency = if i % 50 == 0 {
                10.0
            } else {
                f64::from(i) / 1000.0
            };
            w.push(latency, i < 50);
        }
        let s = w.take(0.9).unwrap();
        assert!((s.latency - 0.092).abs() < 1e-9, "{}", s.latency);
        assert!(s.saturated);
        assert_eq!(w.len(), 0);
        assert_eq!(w.take(0.9), None);
        w.push(0.1, false);
        w.push(0.1, true);
        w.push(0.1, false);
        assert!(!w.take(0.9).unwrap().saturated);
    }
}
