//! Open loop: requests are scheduled at fixed intervals, independently of
//! the answers, and queued until a connection is free. Latency counts from
//! the scheduled send time, so queueing delay is not hidden (no coordinated
//! omission).
//!
//! # Pacing
//!
//! The schedule is kept by a dedicated OS thread, the *pacer*, rather than
//! by tokio's timer: tokio's timer wheel has a 1 ms resolution, so at high
//! rates requests were released in bursts once a millisecond, and since
//! latency counts from the scheduled time, up to a millisecond of generator
//! lag was added to every measured latency.
//!
//! The pacer releases every request whose scheduled time has passed into a
//! bounded queue the connections take requests from, then sleeps with
//! [`std::thread::sleep`]: when the next request is more than two
//! [`TICK`]s away, until one `TICK` before it; otherwise for the remaining
//! gap, at most one `TICK`. Whatever is due when it wakes up goes out at
//! once, each request keeping its own scheduled time (at 20 000 req/s and
//! more, a few requests per wake-up). It never spins, so it leaves the CPU
//! to the connections and, on a shared machine, to the server under test.
//!
//! Expected accuracy: Linux adds a timer slack of about 50 µs to each sleep
//! of an ordinary thread, so a request leaves the pacer some 50–100 µs
//! after its scheduled time and is taken up by a free connection a few µs
//! to some tens of µs later: on a machine that is not saturated, expect a
//! send delay (`send_delay_us` in the report) of 100–200 µs at most for
//! nearly all requests (measured on a 2-core VM at 20 000–40 000 req/s:
//! median 60–90 µs, p90 70–150 µs). Larger delays mean that no connection
//! was free or that the generator was short of CPU; they are reported,
//! never hidden, and counted as late above [`LATE_THRESHOLD`].
//!
//! Smooth sending costs CPU: the pacer wakes up to about 12 000 times a
//! second and wakes the runtime each time, where millisecond bursts needed
//! 1 000 wake-ups; the server under test, too, gets fewer requests per
//! wake-up than it did from bursts. Leave the generator enough CPU.
//!
//! Scheduled and send times are taken from one clock, [`std::time::Instant`]
//! (the run's start is converted from tokio's `Instant`, which wraps the
//! same clock), so the pacer thread and the connections agree on them.
//!
//! The pacer stops by itself once the duration or the `--requests` budget
//! is used up, or when the queue's receiving side is gone; it then drops
//! the queue's sender, which lets the connections finish the backlog and
//! exit.

use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant as StdInstant};

use tokio::sync::{Mutex, mpsc};
use tokio::task::JoinSet;
use tokio::time::Instant;

use super::conn::Conn;
use super::exchange::exchange;
use super::finished::{ErrorKind, Finished, RequestFailure, RequestResult};
use super::plan::RunPlan;
use crate::error::BenchError;
use crate::http::stats::Stats;

/// A request that left more than this after its scheduled time is "late".
/// The pacer is accurate to a few hundred µs at worst, so a delay this long
/// means the request waited for a free connection (or the generator was
/// starved of CPU).
pub(crate) const LATE_THRESHOLD: Duration = Duration::from_millis(2);

/// Queued requests allowed per connection before the generator drops them.
const BACKLOG_PER_CONNECTION: usize = 1000;

/// The pacer's fine sleep: it sleeps at most this long when the next
/// request is near, and wakes up this long before a distant one.
const TICK: Duration = Duration::from_micros(100);

/// The pacer's longest sleep, so that it notices soon enough that the
/// connections are gone even at a very low rate.
const MAX_NAP: Duration = Duration::from_millis(10);

/// A scheduled request.
#[derive(Debug, Clone, Copy)]
struct Ticket {
    scheduled: StdInstant,
    measured: bool,
}

/// What the scheduler did (measured requests only).
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Schedule {
    /// Requests scheduled after the warm-up.
    pub(crate) scheduled: u64,
    /// Requests dropped because the backlog was full.
    pub(crate) dropped: u64,
    /// The backlog bound.
    pub(crate) capacity: usize,
}

/// Schedules `rate` requests per second until the duration ends (or the
/// `--requests` budget is scheduled), lets the connections drain the
/// backlog, and returns the merged stats with the scheduler's counts.
pub(crate) async fn run(
    plan: &Arc<RunPlan>,
    rate: f64,
    conns: Vec<Option<Conn>>,
) -> Result<(Stats, Schedule), BenchError> {
    let capacity = conns.len().saturating_mul(BACKLOG_PER_CONNECTION).max(1);
    let (tx, rx) = mpsc::channel(capacity);
    let rx = Arc::new(Mutex::new(rx));
    let mut set = JoinSet::new();
    for conn in conns {
        set.spawn(client(Arc::clone(plan), Arc::clone(&rx), conn));
    }
    // The clients hold the only receivers: once they are gone, the pacer
    // finds the queue closed and stops.
    drop(rx);
    let pacing = Pacing::new(plan, rate, capacity);
    // The pacer owns the only sender; when it returns, the queue closes and
    // the clients exit once it is drained. Should the thread not start, the
    // sender is dropped with it and the clients exit at once.
    let pacer = thread::Builder::new()
        .name("lather-pacer".to_owned())
        .spawn(move || pacing.run(&tx))
        .map_err(BenchError::Pacer)?;

    let mut total = Stats::default();
    while let Some(joined) = set.join_next().await {
        let stats = joined.map_err(|e| BenchError::Task(e.to_string()))?;
        total.merge(&stats);
    }
    // The queue is closed and drained, so the pacer has returned (or is
    // just returning): this join does not block the runtime.
    let schedule = pacer
        .join()
        .map_err(|_| BenchError::Task("the pacer thread panicked".to_owned()))?;
    Ok((total, schedule))
}

/// The schedule, in the pacer thread's clock.
#[derive(Debug, Clone, Copy)]
struct Pacing {
    start: StdInstant,
    warmup_end: StdInstant,
    end: StdInstant,
    /// Requests per second (positive and finite).
    rate: f64,
    /// `--requests`: measured requests to schedule at most.
    max_requests: Option<u64>,
    /// The queue's bound, for the report.
    capacity: usize,
}

impl Pacing {
    fn new(plan: &RunPlan, rate: f64, capacity: usize) -> Self {
        Self {
            start: plan.start.into_std(),
            warmup_end: plan.warmup_end.into_std(),
            end: plan.end.into_std(),
            rate,
            max_requests: plan.max_requests,
            capacity,
        }
    }

    /// The pacer thread's body: releases each request into `tx` at its
    /// scheduled time, dropping (and counting) those that find the queue
    /// full, until the schedule ends or the receiver is gone.
    fn run(self, tx: &mpsc::Sender<Ticket>) -> Schedule {
        let mut out = Schedule {
            capacity: self.capacity,
            ..Schedule::default()
        };
        let mut k: u64 = 0;
        loop {
            // Computed from the start (not accumulated) so that it cannot
            // drift.
            let scheduled = self.start + Duration::from_secs_f64(k as f64 / self.rate);
            if scheduled >= self.end {
                break;
            }
            let measured = scheduled >= self.warmup_end;
            if measured && self.max_requests.is_some_and(|max| out.scheduled >= max) {
                break;
            }
            // When the pacer is behind, due requests go out at once, each
            // keeping its own scheduled time.
            if !wait_until(scheduled, tx) {
                break;
            }
            if measured {
                out.scheduled += 1;
            }
            match tx.try_send(Ticket {
                scheduled,
                measured,
            }) {
                Ok(()) => {}
                Err(mpsc::error::TrySendError::Full(_)) => {
                    if measured {
                        out.dropped += 1;
                    }
                }
                Err(mpsc::error::TrySendError::Closed(_)) => break,
            }
            k += 1;
        }
        out
    }
}

/// Sleeps until `at` has passed; `false` if the receiver went away first.
fn wait_until(at: StdInstant, tx: &mpsc::Sender<Ticket>) -> bool {
    loop {
        let now = StdInstant::now();
        if at <= now {
            return true;
        }
        if tx.is_closed() {
            return false;
        }
        thread::sleep(nap(at - now));
    }
}

/// How long to sleep when the next request is due in `gap`: until a
/// [`TICK`] before it when it is far, else at most a `TICK` (never more
/// than [`MAX_NAP`]).
fn nap(gap: Duration) -> Duration {
    if gap > 2 * TICK {
        (gap - TICK).min(MAX_NAP)
    } else {
        gap.min(TICK)
    }
}

async fn client(
    plan: Arc<RunPlan>,
    queue: Arc<Mutex<mpsc::Receiver<Ticket>>>,
    mut slot: Option<Conn>,
) -> Stats {
    let mut stats = Stats::default();
    let mut scratch = Vec::new();
    loop {
        let ticket = queue.lock().await.recv().await;
        let Some(ticket) = ticket else {
            break;
        };
        // The pacer's clock; tokio's `Instant` wraps the same one.
        let now = Instant::from_std(StdInstant::now());
        let scheduled = Instant::from_std(ticket.scheduled);
        // The timeout counts from the scheduled time, like the latency.
        let deadline = scheduled + plan.timeout;
        let ex = if now >= deadline {
            Finished {
                outcome: RequestResult::Failed(RequestFailure::new(
                    ErrorKind::Timeout,
                    format!(
                        "queued in the generator for more than {} ms",
                        plan.timeout.as_millis()
                    ),
                )),
                finished: now,
                bytes_sent: 0,
                bytes_received: 0,
            }
        } else {
            exchange(&plan, &mut slot, deadline, &mut scratch).await
        };
        if ticket.measured {
            stats.note_send(scheduled, now, LATE_THRESHOLD);
            let ok = stats.record(ex, scheduled);
            plan.live.count(ok);
        }
    }
    stats
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pacing(rate: f64, length: Duration) -> Pacing {
        let start = StdInstant::now();
        Pacing {
            start,
            warmup_end: start,
            end: start + length,
            rate,
            max_requests: None,
            capacity: 16,
        }
    }

    #[test]
    fn naps_are_short_near_a_request_and_end_early_before_a_far_one() {
        assert_eq!(nap(Duration::from_micros(30)), Duration::from_micros(30));
        assert_eq!(nap(Duration::from_micros(150)), TICK);
        assert_eq!(nap(Duration::from_micros(900)), Duration::from_micros(800));
        assert_eq!(nap(Duration::from_secs(5)), MAX_NAP);
    }

    #[test]
    fn the_pacer_schedules_requests_at_sub_millisecond_spacing_and_never_early() {
        // 1250 req/s puts requests 800 µs apart, at every phase of a millisecond: a
        // millisecond timer would have to round them.
        let (tx, mut rx) = mpsc::channel(64);
        let p = pacing(1250.0, Duration::from_millis(40));
        let schedule = p.run(&tx);
        let returned = StdInstant::now();
        drop(tx);
        let mut tickets = Vec::new();
        while let Ok(ticket) = rx.try_recv() {
            tickets.push(ticket);
        }
        assert_eq!(schedule.scheduled, 50);
        assert_eq!(tickets.len(), 50);
        for (k, pair) in tickets.windows(2).enumerate() {
            let gap = pair[1].scheduled - pair[0].scheduled;
            assert!(
                gap.abs_diff(Duration::from_micros(800)) <= Duration::from_micros(1),
                "gap {k}: {gap:?}"
            );
        }
        assert_eq!(tickets[0].scheduled, p.start);
        // Each ticket is released once its time has come, so the last one not before.
        assert!(returned >= tickets[49].scheduled);
    }

    #[test]
    fn the_pacer_counts_what_the_full_queue_drops() {
        // 16 slots, nobody reading: 100 requests at once, 84 dropped.
        let (tx, _rx) = mpsc::channel(16);
        let mut p = pacing(1e9, Duration::from_secs(60));
        p.max_requests = Some(100);
        let schedule = p.run(&tx);
        assert_eq!(schedule.scheduled, 100);
        assert_eq!(schedule.dropped, 84);
        assert_eq!(schedule.capacity, 16);
    }

    #[test]
    fn the_pacer_stops_when_the_receiver_is_gone() {
        // One request a second for an hour: only the closed queue can end
        // it early.
        let (tx, rx) = mpsc::channel(16);
        let pacer = thread::spawn(move || pacing(1.0, Duration::from_secs(3600)).run(&tx));
        drop(rx);
        // `join` would hang the test if the pacer did not stop by itself.
        let schedule = pacer.join().expect("the pacer does not panic");
        assert!(schedule.scheduled <= 2, "{schedule:?}");
    }
}
