//! Per-connection results, merged into the report at the end.

use std::collections::BTreeMap;
use std::time::Duration;

use hdrhistogram::Histogram;
use tokio::time::Instant;

use crate::http::ErrorKind;
use crate::http::finished::{Finished, RequestResult};

/// Lowest and highest trackable latency (µs) and significant digits.
const HIST_LOW: u64 = 1;
const HIST_HIGH: u64 = 60_000_000;
const HIST_SIGFIG: u8 = 3;

/// A fresh latency histogram (microseconds, 1 µs .. 60 s, 3 digits).
pub(crate) fn new_histogram() -> Histogram<u64> {
    // The bounds are constants that hdrhistogram accepts.
    Histogram::new_with_bounds(HIST_LOW, HIST_HIGH, HIST_SIGFIG)
        .unwrap_or_else(|e| unreachable!("constant histogram bounds rejected: {e}"))
}

/// What one connection (virtual client) measured.
#[derive(Debug)]
pub(crate) struct Stats {
    /// Latency of successful requests, µs.
    pub(crate) latency: Histogram<u64>,
    pub(crate) ok: u64,
    pub(crate) failed: u64,
    /// Answers per status code (2xx included).
    pub(crate) status: BTreeMap<u16, u64>,
    pub(crate) errors: [u64; ErrorKind::ALL.len()],
    /// The first cause seen per error kind.
    pub(crate) error_examples: BTreeMap<ErrorKind, String>,
    pub(crate) bytes_sent: u64,
    pub(crate) bytes_received: u64,
    /// When the last measured request finished.
    pub(crate) last_finished: Option<Instant>,
    /// Open loop: requests that left later than their schedule allowed.
    pub(crate) sent_late: u64,
    /// Open loop: the largest delay between schedule and send.
    pub(crate) max_send_delay: Duration,
    /// Open loop: delay between schedule and send, µs.
    pub(crate) send_delay: Histogram<u64>,
    /// Open loop: when the last measured request was sent.
    pub(crate) last_sent: Option<Instant>,
}

impl Default for Stats {
    fn default() -> Self {
        Self {
            latency: new_histogram(),
            ok: 0,
            failed: 0,
            status: BTreeMap::new(),
            errors: [0; ErrorKind::ALL.len()],
            error_examples: BTreeMap::new(),
            bytes_sent: 0,
            bytes_received: 0,
            last_finished: None,
            sent_late: 0,
            max_send_delay: Duration::ZERO,
            send_delay: new_histogram(),
            last_sent: None,
        }
    }
}

impl Stats {
    /// Records a measured exchange whose latency counts from `origin`
    /// (send time in the closed loop, scheduled time in the open loop).
    /// Returns whether it succeeded.
    pub(crate) fn record(&mut self, exchange: Finished, origin: Instant) -> bool {
        self.bytes_sent += exchange.bytes_sent;
        self.bytes_received += exchange.bytes_received;
        self.last_finished = Some(
            self.last_finished
                .map_or(exchange.finished, |t| t.max(exchange.finished)),
        );
        match exchange.outcome {
            RequestResult::Answer { status, expect_ok } => {
                *self.status.entry(status).or_insert(0) += 1;
                if !(200..300).contains(&status) {
                    self.failed += 1;
                    false
                } else if !expect_ok {
                    self.failed += 1;
                    self.count_error(ErrorKind::ExpectMismatch, || {
                        "2xx answer without the --expect string".to_owned()
                    });
                    false
                } else {
                    self.ok += 1;
                    let micros = exchange
                        .finished
                        .saturating_duration_since(origin)
                        .as_micros();
                    self.latency
                        .saturating_record(u64::try_from(micros).unwrap_or(u64::MAX).max(1));
                    true
                }
            }
            RequestResult::Failed(failure) => {
                self.failed += 1;
                self.count_error(failure.kind, || failure.detail);
                false
            }
        }
    }

    /// Counts one error; `detail` is only kept for the first of its kind.
    pub(crate) fn count_error(&mut self, kind: ErrorKind, detail: impl FnOnce() -> String) {
        self.errors[kind.index()] += 1;
        self.error_examples.entry(kind).or_insert_with(detail);
    }

    /// Open loop: notes that a request scheduled at `scheduled` was sent at
    /// `sent`.
    pub(crate) fn note_send(
        &mut self,
        scheduled: Instant,
        sent: Instant,
        late_threshold: Duration,
    ) {
        let delay = sent.saturating_duration_since(scheduled);
        if delay > late_threshold {
            self.sent_late += 1;
        }
        self.max_send_delay = self.max_send_delay.max(delay);
        self.send_delay
            .saturating_record(u64::try_from(delay.as_micros()).unwrap_or(u64::MAX));
        self.last_sent = Some(self.last_sent.map_or(sent, |t| t.max(sent)));
    }

    /// Adds `other` into `self`.
    pub(crate) fn merge(&mut self, other: &Self) {
        // Both histograms share the same bounds, so adding cannot fail.
        let _ = self.latency.add(&other.latency);
        let _ = self.send_delay.add(&other.send_delay);
        self.ok += other.ok;
        self.failed += other.failed;
        for (status, n) in &other.status {
            *self.status.entry(*status).or_insert(0) += n;
        }
        for (mine, theirs) in self.errors.iter_mut().zip(other.errors) {
            *mine += theirs;
        }
        for (kind, detail) in &other.error_examples {
            self.error_examples
                .entry(*kind)
                .or_insert_with(|| detail.clone());
        }
        self.bytes_sent += other.bytes_sent;
        self.bytes_received += other.bytes_received;
        self.last_finished = latest(self.last_finished, other.last_finished);
        self.last_sent = latest(self.last_sent, other.last_sent);
        self.sent_late += other.sent_late;
        self.max_send_delay = self.max_send_delay.max(other.max_send_delay);
    }
}

fn latest(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    }
}
