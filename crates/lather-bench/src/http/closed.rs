//! Closed loop: every connection sends its next request as soon as the
//! previous answer has been read.

use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinSet;
use tokio::time::Instant;

use super::conn::Conn;
use super::exchange::exchange;
use super::finished::{ErrorKind, RequestResult};
use super::plan::RunPlan;
use crate::error::BenchError;
use crate::http::stats::Stats;

/// First and largest pause after a failed connect, so that a dead server
/// does not turn the generator into a busy loop.
const BACKOFF_MIN: Duration = Duration::from_millis(10);
const BACKOFF_MAX: Duration = Duration::from_millis(500);

/// Runs one virtual client per connection until the duration ends or the
/// `--requests` budget is used up; returns the merged stats.
pub(crate) async fn run(
    plan: &Arc<RunPlan>,
    conns: Vec<Option<Conn>>,
) -> Result<Stats, BenchError> {
    let mut set = JoinSet::new();
    for conn in conns {
        set.spawn(client(Arc::clone(plan), conn));
    }
    let mut total = Stats::default();
    while let Some(joined) = set.join_next().await {
        let stats = joined.map_err(|e| BenchError::Task(e.to_string()))?;
        total.merge(&stats);
    }
    Ok(total)
}

async fn client(plan: Arc<RunPlan>, mut slot: Option<Conn>) -> Stats {
    let mut stats = Stats::default();
    let mut scratch = Vec::new();
    let mut backoff = BACKOFF_MIN;
    loop {
        let sent = Instant::now();
        if sent >= plan.end {
            break;
        }
        let measured = plan.is_measured(sent);
        if measured && !plan.take_ticket() {
            break;
        }
        let ex = exchange(&plan, &mut slot, sent + plan.timeout, &mut scratch).await;
        let connect_failed =
            matches!(&ex.outcome, RequestResult::Failed(f) if f.kind == ErrorKind::Connect);
        if measured {
            let ok = stats.record(ex, sent);
            plan.live.count(ok);
        }
        if connect_failed {
            tokio::time::sleep_until((Instant::now() + backoff).min(plan.end)).await;
            backoff = (backoff * 2).min(BACKOFF_MAX);
        } else {
            backoff = BACKOFF_MIN;
        }
    }
    stats
}
