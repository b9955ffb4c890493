//! One backend of a gateway and what the gateway knows of it: requests in flight, recent
//! failures, whether it is ejected (passively, after failures in a row) or down (by
//! active health checks), and its counters for `/metrics`.

use super::upstream_client::BudgetSlot;
use lather_config::Upstream;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// How a try at a backend failed, for ejection, logs and metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FailureKind {
    /// The connection was refused or failed before the request was written.
    Refused,
    /// The connection did not open within `connect_timeout_ms`.
    ConnectTimeout,
    /// The request was sent and no answer came in time.
    Timeout,
    /// The connection failed after the request was (maybe) written, or the answer could
    /// not be read.
    Failed,
    /// The TLS handshake failed (a certificate that does not verify, an alert): not tried
    /// on another backend, so that the problem is seen rather than hidden.
    Tls,
}

impl FailureKind {
    /// Every kind, in the order `/metrics` lists them.
    pub(crate) const ALL: [FailureKind; 5] = [
        FailureKind::Refused,
        FailureKind::ConnectTimeout,
        FailureKind::Timeout,
        FailureKind::Failed,
        FailureKind::Tls,
    ];

    /// The `kind` label.
    pub(crate) fn name(self) -> &'static str {
        match self {
            FailureKind::Refused => "refused",
            FailureKind::ConnectTimeout => "connect_timeout",
            FailureKind::Timeout => "timeout",
            FailureKind::Failed => "failed",
            FailureKind::Tls => "tls",
        }
    }
}

/// Where a backend stands, for `/metrics` and readiness.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Standing {
    /// Takes requests.
    Up,
    /// Ejected after failures in a row; takes none until its cool-down is over.
    Ejected,
    /// Failed its health checks; takes none until it passes them again.
    Down,
}

impl Standing {
    /// The `lather_upstream_state` value: 0 up, 1 ejected, 2 down.
    pub(crate) fn gauge(self) -> i64 {
        match self {
            Standing::Up => 0,
            Standing::Ejected => 1,
            Standing::Down => 2,
        }
    }
}

/// The ejection rules of a gateway.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ejection {
    /// Failures in a row that eject (0: never).
    pub(crate) after: u32,
    /// The first cool-down; each ejection in a row doubles it, up to 8 times.
    pub(crate) cool_down: Duration,
    /// How long one trial request after a cool-down keeps the backend to itself.
    pub(crate) trial: Duration,
}

/// One backend and its record.
#[derive(Debug)]
pub(crate) struct Backend {
    /// Its URL.
    pub(crate) upstream: Upstream,
    outstanding: AtomicUsize,
    record: Mutex<Record>,
    requests: AtomicU64,
    failures: [AtomicU64; 5],
    /// Time to a backend's answer (headers and body read), answered tries only.
    pub(crate) latency: Histogram,
    /// Its place in the client's connection budget, found on its first request.
    pub(crate) budget: BudgetSlot,
}

/// What is locked: the passive and active health of the backend.
#[derive(Debug, Default)]
struct Record {
    /// Failures since the last answer.
    failures_in_a_row: u32,
    /// Ejections since the last answer.
    ejections_in_a_row: u32,
    /// Ejected until then.
    ejected_until: Option<Instant>,
    /// A trial request after a cool-down is out until then: others wait for its outcome.
    trial_until: Option<Instant>,
    /// Failed its health checks.
    down: bool,
    /// Health checks passed (while down) or failed (while up) in a row.
    checks_in_a_row: u32,
}

/// A request in flight at a backend; counted in its outstanding requests until dropped.
#[derive(Debug)]
pub(crate) struct InFlight<'a>(&'a Backend);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.outstanding.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Backend {
    /// A backend with a clean record.
    pub(crate) fn new(upstream: Upstream) -> Self {
        Backend {
            upstream,
            outstanding: AtomicUsize::new(0),
            record: Mutex::new(Record::default()),
            requests: AtomicU64::new(0),
            failures: Default::default(),
            // 100 µs … ~105 s, doubling.
            latency: Histogram::new(exponential_buckets(0.000_1, 2.0, 21)),
            budget: BudgetSlot::new(),
        }
    }

    fn record(&self) -> std::sync::MutexGuard<'_, Record> {
        self.record
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Its weight under weighted balancing.
    pub(crate) fn weight(&self) -> u32 {
        self.upstream.weight.max(1)
    }

    /// Requests in flight at it now.
    pub(crate) fn outstanding(&self) -> usize {
        self.outstanding.load(Ordering::Relaxed)
    }

    /// Whether it takes a request now: not down, not ejected (or its cool-down over and no
    /// trial request out).
    pub(crate) fn available(&self, now: Instant) -> bool {
        let record = self.record();
        !record.down
            && record.ejected_until.is_none_or(|until| now >= until)
            && record.trial_until.is_none_or(|until| now >= until)
    }

    /// When it takes requests again (now when it does); down backends last.
    pub(crate) fn back_at(&self, now: Instant) -> Option<Instant> {
        let record = self.record();
        if record.down {
            return None;
        }
        Some(record.ejected_until.map_or(now, |u| u.max(now)))
    }

    /// Where it stands now.
    pub(crate) fn standing(&self, now: Instant) -> Standing {
        let record = self.record();
        if record.down {
            Standing::Down
        } else if record.ejected_until.is_some_and(|until| now < until) {
            Standing::Ejected
        } else {
            Standing::Up
        }
    }

    /// Starts a try: counts it, and when the backend comes out of a cool-down makes this
    /// the trial request the others wait for.
    pub(crate) fn begin(&self, ejection: &Ejection) -> InFlight<'_> {
        self.requests.fetch_add(1, Ordering::Relaxed);
        self.outstanding.fetch_add(1, Ordering::Relaxed);
        let mut record = self.record();
        if record.ejected_until.is_some() {
            record.trial_until = Some(Instant::now() + ejection.trial);
        }
        InFlight(self)
    }

    /// The backend answered: its failures are forgotten and an ejection ends.
    pub(crate) fn answered(&self, took: Duration) {
        self.latency.observe(took.as_secs_f64());
        let mut record = self.record();
        let was_ejected = record.ejected_until.take().is_some();
        record.failures_in_a_row = 0;
        record.ejections_in_a_row = 0;
        record.trial_until = None;
        drop(record);
        if was_ejected {
            tracing::info!(upstream = %self.upstream.url, "backend answered again: back in rotation");
        }
    }

    /// A try failed; ejects the backend when that makes `ejection.after` in a row (or a
    /// trial after a cool-down failed). Whether it was ejected now.
    pub(crate) fn failed(&self, kind: FailureKind, ejection: &Ejection) -> bool {
        self.failures[kind as usize].fetch_add(1, Ordering::Relaxed);
        if ejection.after == 0 {
            return false;
        }
        let now = Instant::now();
        let mut record = self.record();
        record.failures_in_a_row = record.failures_in_a_row.saturating_add(1);
        let trial_failed = record.ejected_until.is_some_and(|until| now >= until);
        if !trial_failed && record.failures_in_a_row < ejection.after {
            return false;
        }
        if record.ejected_until.is_some_and(|until| now < until) {
            // Already ejected (a try begun before the ejection ended late).
            return false;
        }
        let factor = 1u32 << record.ejections_in_a_row.min(3);
        let factor = factor.min(lather_config::MAX_EJECT_FACTOR);
        let cool_down = ejection.cool_down * factor;
        record.ejections_in_a_row = record.ejections_in_a_row.saturating_add(1);
        record.ejected_until = Some(now + cool_down);
        record.trial_until = None;
        let in_a_row = record.failures_in_a_row;
        drop(record);
        tracing::warn!(
            upstream = %self.upstream.url,
            failures_in_a_row = in_a_row,
            cool_down_ms = cool_down.as_millis() as u64,
            last = kind.name(),
            "backend ejected"
        );
        true
    }

    /// A health check's outcome: `unhealthy_after` failures in a row take the backend
    /// down, `healthy_after` passes in a row bring it back.
    pub(crate) fn checked(&self, passed: bool, unhealthy_after: u32, healthy_after: u32) {
        let mut record = self.record();
        let changed = if record.down == passed {
            // A check that points the other way.
            record.checks_in_a_row += 1;
            let needed = if passed {
                healthy_after
            } else {
                unhealthy_after
            };
            if record.checks_in_a_row >= needed {
                record.down = !passed;
                record.checks_in_a_row = 0;
                if passed {
                    // Back from a health check: a clean passive record too.
                    record.ejected_until = None;
                    record.failures_in_a_row = 0;
                    record.ejections_in_a_row = 0;
                }
                true
            } else {
                false
            }
        } else {
            record.checks_in_a_row = 0;
            false
        };
        let down = record.down;
        drop(record);
        if changed && down {
            tracing::warn!(upstream = %self.upstream.url, "backend failed its health checks: out of rotation");
        } else if changed {
            tracing::info!(upstream = %self.upstream.url, "backend passed its health checks: back in rotation");
        }
    }

    /// Tries sent to it.
    pub(crate) fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }

    /// Failed tries of `kind`.
    pub(crate) fn failures(&self, kind: FailureKind) -> u64 {
        self.failures[kind as usize].load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn backend() -> Backend {
        Backend::new(Upstream {
            url: "http://127.0.0.1:1/x".into(),
            uri: "http://127.0.0.1:1/x".parse().unwrap(),
            weight: 1,
        })
    }

    const RULES: Ejection = Ejection {
        after: 2,
        cool_down: Duration::from_millis(40),
        trial: Duration::from_secs(5),
    };

    #[test]
    fn failures_in_a_row_eject_and_a_trial_answer_brings_it_back() {
        let b = backend();
        let now = Instant::now();
        assert!(!b.failed(FailureKind::Refused, &RULES));
        assert!(b.available(now));
        assert!(b.failed(FailureKind::Timeout, &RULES));
        assert_eq!(b.standing(Instant::now()), Standing::Ejected);
        assert!(!b.available(Instant::now()));
        std::thread::sleep(Duration::from_millis(50));
        assert!(b.available(Instant::now()));
        let trial = b.begin(&RULES);
        // While the trial is out, no other request goes there.
        assert!(!b.available(Instant::now()));
        b.answered(Duration::from_millis(1));
        drop(trial);
        assert!(b.available(Instant::now()));
        assert_eq!(b.standing(Instant::now()), Standing::Up);
        assert_eq!(b.failures(FailureKind::Refused), 1);
        assert_eq!(b.requests(), 1);
    }

    #[test]
    fn a_failed_trial_ejects_again_for_twice_as_long() {
        let b = backend();
        b.failed(FailureKind::Refused, &RULES);
        b.failed(FailureKind::Refused, &RULES);
        std::thread::sleep(Duration::from_millis(50));
        let _trial = b.begin(&RULES);
        assert!(b.failed(FailureKind::Refused, &RULES));
        let back = b.back_at(Instant::now()).unwrap();
        assert!(
            back > Instant::now() + Duration::from_millis(60),
            "doubled cool-down"
        );
    }

    #[test]
    fn health_checks_take_down_and_bring_back_after_their_thresholds() {
        let b = backend();
        b.checked(false, 2, 3);
        assert_eq!(b.standing(Instant::now()), Standing::Up);
        b.checked(false, 2, 3);
        assert_eq!(b.standing(Instant::now()), Standing::Down);
        assert!(!b.available(Instant::now()));
        b.checked(true, 2, 3);
        b.checked(false, 2, 3);
        b.checked(true, 2, 3);
        b.checked(true, 2, 3);
        assert_eq!(
            b.standing(Instant::now()),
            Standing::Down,
            "a failure reset the passes"
        );
        b.checked(true, 2, 3);
        assert_eq!(b.standing(Instant::now()), Standing::Up);
    }
}
