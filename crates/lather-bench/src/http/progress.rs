//! The live progress bar (elapsed / duration, req/s).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::http::plan::RunPlan;

/// Counters the connections bump after every measured request.
#[derive(Debug, Default)]
pub(crate) struct LiveCounters {
    ok: AtomicU64,
    failed: AtomicU64,
}

impl LiveCounters {
    /// Counts one finished request.
    pub(crate) fn count(&self, ok: bool) {
        let counter = if ok { &self.ok } else { &self.failed };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    fn snapshot(&self) -> (u64, u64) {
        (
            self.ok.load(Ordering::Relaxed),
            self.failed.load(Ordering::Relaxed),
        )
    }
}

/// A progress bar on stderr refreshed by a background task. It is hidden
/// with `--quiet` and, by indicatif, whenever stderr is not a terminal.
#[derive(Debug)]
pub(crate) struct ProgressDisplay {
    bar: ProgressBar,
    ticker: Option<JoinHandle<()>>,
}

const REFRESH: Duration = Duration::from_millis(250);

impl ProgressDisplay {
    /// Starts the bar for `plan` (a no-op bar when `quiet`).
    pub(crate) fn start(plan: &Arc<RunPlan>, quiet: bool) -> Self {
        if quiet {
            return Self {
                bar: ProgressBar::hidden(),
                ticker: None,
            };
        }
        let total = plan.end.saturating_duration_since(plan.start);
        let bar = ProgressBar::with_draw_target(
            Some(millis(total)),
            ProgressDrawTarget::stderr_with_hz(4),
        );
        if let Ok(style) = ProgressStyle::with_template("{bar:30} {msg}") {
            bar.set_style(style);
        }
        let ticker = tokio::spawn(tick(Arc::clone(plan), bar.clone()));
        Self {
            bar,
            ticker: Some(ticker),
        }
    }

    /// Stops refreshing and removes the bar.
    pub(crate) fn finish(self) {
        if let Some(ticker) = &self.ticker {
            ticker.abort();
        }
        self.bar.finish_and_clear();
    }
}

async fn tick(plan: Arc<RunPlan>, bar: ProgressBar) {
    let total = plan.end.saturating_duration_since(plan.start).as_secs_f64();
    let mut interval = tokio::time::interval(REFRESH);
    let mut last = (Instant::now(), 0_u64);
    loop {
        interval.tick().await;
        let now = Instant::now();
        let (ok, failed) = plan.live.snapshot();
        let done = ok + failed;
        let dt = now.saturating_duration_since(last.0).as_secs_f64();
        let rate = if dt > 0.0 {
            done.saturating_sub(last.1) as f64 / dt
        } else {
            0.0
        };
        last = (now, done);
        let elapsed = now.saturating_duration_since(plan.start);
        let phase = if now < plan.warmup_end {
            "warm-up "
        } else if now >= plan.end {
            "draining "
        } else {
            ""
        };
        bar.set_position(millis(elapsed));
        bar.set_message(format!(
            "{phase}{:.1}/{total:.1} s  {rate:.0} req/s  ok {ok}  failed {failed}",
            elapsed.as_secs_f64()
        ));
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}
