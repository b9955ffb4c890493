//! Sleeping until an instant with microsecond precision: the kernel's sleep for the bulk
//! of the wait, a busy wait for its end (a plain sleep overshoots by the timer slack,
//! ~50–100 µs on Linux, as much as the delay being made).

use std::time::{Duration, Instant};

/// The tail of a wait spent busy-waiting instead of sleeping.
const SPIN: Duration = Duration::from_micros(120);

/// Returns at `due` or just after it; at once when `due` has passed.
pub(super) fn until(due: Instant) {
    loop {
        let now = Instant::now();
        if now >= due {
            return;
        }
        let left = due - now;
        if left > SPIN {
            std::thread::sleep(left - SPIN);
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
        for micros in [0, 30, 150, 900] {
            let due = Instant::now() + Duration::from_micros(micros);
            until(due);
            assert!(
                Instant::now() >= due,
                "returned before a {micros} µs deadline"
            );
        }
    }
}
