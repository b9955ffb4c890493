//! One request's spans, marked as it passes each point.

use super::Phase;
use std::fmt::Write as _;
use std::time::Instant;

/// The time one request spent in each [`Phase`], measured from the request head's arrival.
/// A phase the request did not pass (a fault before admission) stays unmarked.
#[derive(Debug, Clone)]
pub(crate) struct Timeline {
    /// Whether points are marked at all (off: no clock is read).
    enabled: bool,
    start: Instant,
    last: Instant,
    nanos: [u64; 7],
    marked: u8,
}

impl Timeline {
    /// A timeline starting at `start`, the request head's arrival.
    pub(crate) fn new(start: Instant) -> Self {
        Timeline {
            enabled: true,
            start,
            last: start,
            nanos: [0; 7],
            marked: 0,
        }
    }

    /// A timeline that marks nothing: no phase is measured (`total_nanos` reads the clock
    /// once, for the request's duration).
    pub(crate) fn disabled(start: Instant) -> Self {
        Timeline {
            enabled: false,
            ..Timeline::new(start)
        }
    }

    /// Ends `phase` now: it lasted from the previous mark (or the start) until now.
    pub(crate) fn mark(&mut self, phase: Phase) {
        if !self.enabled {
            return;
        }
        let now = Instant::now();
        let span = now.saturating_duration_since(self.last);
        self.nanos[phase.index()] += u64::try_from(span.as_nanos()).unwrap_or(u64::MAX);
        self.marked |= 1 << phase.index();
        self.last = now;
    }

    /// The phases marked, with their lengths in nanoseconds.
    pub(crate) fn spans(&self) -> impl Iterator<Item = (Phase, u64)> + '_ {
        Phase::ALL
            .into_iter()
            .filter(|p| self.marked & (1 << p.index()) != 0)
            .map(|p| (p, self.nanos[p.index()]))
    }

    /// From the start to the last mark (for a disabled timeline: to now), in nanoseconds.
    pub(crate) fn total_nanos(&self) -> u64 {
        let end = if self.enabled {
            self.last
        } else {
            Instant::now()
        };
        u64::try_from(end.saturating_duration_since(self.start).as_nanos()).unwrap_or(u64::MAX)
    }

    /// The `Server-Timing` header value (RFC-less but W3C Server Timing): each phase
    /// marked and `total`, as `name;dur=MILLISECONDS` with microsecond precision.
    pub(crate) fn server_timing(&self) -> String {
        let mut out = String::with_capacity(160);
        for (phase, nanos) in self.spans() {
            let _ = write!(out, "{};dur={:.3}, ", phase.name(), nanos as f64 / 1e6);
        }
        let _ = write!(out, "total;dur={:.3}", self.total_nanos() as f64 / 1e6);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn spans_add_up_to_the_total_and_unmarked_phases_are_left_out() {
        let mut t = Timeline::new(Instant::now());
        std::thread::sleep(Duration::from_millis(2));
        t.mark(Phase::Receive);
        t.mark(Phase::Decode);
        std::thread::sleep(Duration::from_millis(3));
        t.mark(Phase::Call);
        std::thread::sleep(Duration::from_millis(1));
        t.mark(Phase::ResponseStages);
        t.mark(Phase::Encode);
        let spans: Vec<(Phase, u64)> = t.spans().collect();
        let phases: Vec<Phase> = spans.iter().map(|(p, _)| *p).collect();
        assert_eq!(
            phases,
            [
                Phase::Receive,
                Phase::Decode,
                Phase::Call,
                Phase::ResponseStages,
                Phase::Encode
            ]
        );
        let sum: u64 = spans.iter().map(|(_, n)| n).sum();
        assert_eq!(sum, t.total_nanos());
        assert!(spans[0].1 >= 2_000_000);
        assert!(spans[2].1 >= 3_000_000);
        assert!(spans[3].1 >= 1_000_000);
        let header = t.server_timing();
        assert!(header.starts_with("receive;dur="), "{header}");
        // At least the 1 ms slept (a busy machine sleeps longer), in milliseconds.
        let stages: f64 = header
            .split(", ")
            .find_map(|part| part.strip_prefix("response-stages;dur="))
            .and_then(|ms| ms.parse().ok())
            .unwrap_or_else(|| panic!("no response-stages duration: {header}"));
        assert!(stages >= 1.0, "{header}");
        assert!(!header.contains("queue"), "{header}");
        assert!(header.contains(", total;dur="), "{header}");
        let mut off = Timeline::disabled(Instant::now());
        off.mark(Phase::Decode);
        assert_eq!(off.spans().count(), 0);
    }
}
