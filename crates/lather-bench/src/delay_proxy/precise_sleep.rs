//! Sleeping until an instant with microsecond precision: the kernel's sleep for the bulk
//! of the wait, a busy wait for its end (a plain sleep overshoots by the timer slack,
//! ~50–100 µs on Linux, as much as the delay being made).

use std::time::{Duration, Instant};

/// The tail of a wait spent busy-waiting instead of sleeping.
pub(super) const SPIN: Duration = Duration::from_micros(120);

/// Returns at `due` or just after it; at once when `due` has passed. The last `spin` of
/// the wait is a busy wait (zero: the kernel's sleep alone, late by its timer slack).
pub(super) fn until(due: Instant, spin: Duration) {
    loop {
        let now = Instant::now();
        if now >= due {
            return;
        }
        let left = due - now;
        if left > spin {
            std::thread::sleep(left - spin);
        } else {
            std::hint::spin_loop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn never_returns_early() {
        for (micros, spin) in [
            (0, SPIN),
            (30, SPIN),
            (150, SPIN),
            (900, SPIN),
            (900, Duration::ZERO),
        ] {
            let due = Instant::now() + Duration::from_micros(micros);
            until(due, spin);
            assert!(
                Instant::now() >= due,
                "returned before a {micros} µs deadline"
            );
        }
    }
}
