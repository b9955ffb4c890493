//! Open loop: requests are scheduled at fixed intervals, independently of
//! the answers, and queued until a connection is free. Latency counts from
//! the scheduled send time, so queueing delay is not hidden (no coordinated
//! omission).

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{Mutex, mpsc};
use tokio::task::JoinSet;
use tokio::time::Instant;

use super::conn::Conn;
use super::exchange::exchange;
use super::outcome::{ErrorKind, Exchange, Failure, Outcome};
use super::plan::Plan;
use crate::error::BenchError;
use crate::stats::Stats;

/// A request that left more than this after its scheduled time is "late".
/// Tokio's timer has a 1 ms resolution, so anything below is noise.
pub(crate) const LATE_THRESHOLD: Duration = Duration::from_millis(2);

/// Queued requests allowed per connection before the generator drops them.
const BACKLOG_PER_CONNECTION: usize = 1000;

/// A scheduled request.
#[derive(Debug, Clone, Copy)]
struct Ticket {
    scheduled: Instant,
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
    plan: &Arc<Plan>,
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
    let schedule = schedule(plan, rate, &tx, capacity).await;
    // Closing the queue lets the clients exit once it is drained.
    drop(tx);

    let mut total = Stats::default();
    while let Some(joined) = set.join_next().await {
        let stats = joined.map_err(|e| BenchError::Task(e.to_string()))?;
        total.merge(&stats);
    }
    Ok((total, schedule))
}

async fn schedule(plan: &Plan, rate: f64, tx: &mpsc::Sender<Ticket>, capacity: usize) -> Schedule {
    let mut out = Schedule {
        capacity,
        ..Schedule::default()
    };
    let mut k: u64 = 0;
    loop {
        // Computed from the start (not accumulated) so that it cannot drift.
        let scheduled = plan.start + Duration::from_secs_f64(k as f64 / rate);
        if scheduled >= plan.end {
            break;
        }
        let measured = plan.is_measured(scheduled);
        if measured {
            if plan.max_requests.is_some_and(|max| out.scheduled >= max) {
                break;
            }
            out.scheduled += 1;
        }
        // When the generator is behind, due requests go out at once, each
        // keeping its own scheduled time.
        if scheduled > Instant::now() {
            tokio::time::sleep_until(scheduled).await;
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

async fn client(
    plan: Arc<Plan>,
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
        let now = Instant::now();
        // The timeout counts from the scheduled time, like the latency.
        let deadline = ticket.scheduled + plan.timeout;
        let ex = if now >= deadline {
            Exchange {
                outcome: Outcome::Failed(Failure::new(
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
            stats.note_send(ticket.scheduled, now, LATE_THRESHOLD);
            let ok = stats.record(ex, ticket.scheduled);
            plan.live.count(ok);
        }
    }
    stats
}
