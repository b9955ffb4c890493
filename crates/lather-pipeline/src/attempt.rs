//! One handler's call for one message: timeout, panic containment, retries with backoff.

use crate::plan::{Counters, Step};
use crate::{Message, Verdict};
use futures_util::FutureExt;
use lather_envelope::{Fault, FaultKind};
use std::future::{Future, poll_fn};
use std::panic::AssertUnwindSafe;
use std::pin::pin;
use std::task::Poll;
use std::time::{Duration, Instant};

tokio::task_local! {
    static ATTEMPT: u32;
}

/// The attempt the calling handler is running: 0 for the first call of a message, 1 for
/// the first retry, and so on (0 outside the engine). A handler that forwards the call
/// elsewhere, such as a remote stage, passes it on so the other side can tell retries apart.
pub fn current_attempt() -> u32 {
    ATTEMPT.try_with(|a| *a).unwrap_or(0)
}

/// Why a handler gave no verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Failure {
    TimedOut,
    Panicked(String),
}

/// Calls `step` on `message`, retrying a stateless handler after a timeout or panic.
pub(crate) async fn perform(step: &Step, message: &Message) -> Result<Verdict, Failure> {
    let options = step.options();
    let counters = step.counters();
    Counters::bump(&counters.calls);
    let attempts = 1 + if options.stateless {
        options.retries
    } else {
        0
    };
    let mut backoff = options.retry_backoff;
    let mut failure = Failure::TimedOut;
    for attempt in 0..attempts {
        if attempt > 0 {
            Counters::bump(&counters.retries);
            tokio::time::sleep(backoff).await;
            backoff = backoff.saturating_mul(2);
        }
        let call = AssertUnwindSafe(step.handler().call(message)).catch_unwind();
        let started = Instant::now();
        // A first attempt outside any other attempt needs no scope: `current_attempt` reads
        // 0 there all the same, and most calls are first attempts.
        let ended = if attempt == 0 && current_attempt() == 0 {
            within(options.timeout, started, call).await
        } else {
            within(options.timeout, started, ATTEMPT.scope(attempt, call)).await
        };
        match ended {
            Ok(Ok(verdict)) => {
                step.cost().record(started.elapsed());
                return Ok(verdict);
            }
            Ok(Err(panic)) => {
                Counters::bump(&counters.panics);
                let text = panic
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_owned())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "panic".to_owned());
                tracing::warn!(handler = step.name(), attempt, panic = %text, "handler panicked");
                failure = Failure::Panicked(text);
            }
            Err(_) => {
                Counters::bump(&counters.timeouts);
                tracing::warn!(handler = step.name(), attempt, "handler timed out");
                failure = Failure::TimedOut;
            }
        }
    }
    Err(failure)
}

/// `call`'s output, or `Err` when it has not finished `limit` after `started`. Most calls
/// finish on their first poll, so the timer is made (and boxed) only for a call still
/// pending after it.
async fn within<F: Future>(
    limit: Duration,
    started: Instant,
    call: F,
) -> Result<F::Output, tokio::time::error::Elapsed> {
    let mut call = pin!(call);
    if let Poll::Ready(output) = poll_fn(|cx| Poll::Ready(call.as_mut().poll(cx))).await {
        return Ok(output);
    }
    Box::pin(tokio::time::timeout(
        limit.saturating_sub(started.elapsed()),
        call,
    ))
    .await
}

/// The fault a failed call of `step` halts its message with.
pub(crate) fn failure_fault(step: &Step, failure: Failure) -> Fault {
    match failure {
        Failure::TimedOut => Fault::with_reason(
            FaultKind::HandlerTimeout,
            format!(
                "handler {} did not finish within {} ms",
                step.name(),
                step.options().timeout.as_millis()
            ),
        ),
        Failure::Panicked(why) => Fault::with_reason(
            FaultKind::HandlerFailed,
            format!("handler {} failed: {why}", step.name()),
        ),
    }
}

impl Step {
    /// Calls the handler on `message` as a stage would, without merging anything: one
    /// attempt plus the configured retries, each bounded by the timeout, a panic contained.
    /// A timeout or panic comes back as a `HandlerTimeout` or `HandlerFailed` fault verdict.
    /// For hosts that run a single handler for someone else (a remote worker).
    pub async fn perform(&self, message: &Message) -> Verdict {
        match perform(self, message).await {
            Ok(verdict) => verdict,
            Err(failure) => Verdict::Fault(failure_fault(self, failure)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn a_call_ready_at_once_is_never_late() {
        // A zero limit still lets a call that finishes on its first poll through.
        let out = within(Duration::ZERO, Instant::now(), async { 7 }).await;
        assert_eq!(out.unwrap(), 7);
    }

    #[tokio::test]
    async fn a_pending_call_finishing_in_time_gives_its_output() {
        let call = async {
            tokio::time::sleep(Duration::from_millis(5)).await;
            "done"
        };
        let out = within(Duration::from_secs(5), Instant::now(), call).await;
        assert_eq!(out.unwrap(), "done");
    }

    #[tokio::test]
    async fn a_pending_call_past_its_limit_times_out() {
        let started = Instant::now();
        let out = within(
            Duration::from_millis(20),
            started,
            std::future::pending::<()>(),
        )
        .await;
        assert!(out.is_err());
        assert!(started.elapsed() >= Duration::from_millis(20));
    }

    #[tokio::test(start_paused = true)]
    async fn time_spent_in_the_first_poll_counts_against_the_limit() {
        // The first poll alone takes longer than the limit, then the call waits forever.
        // The timer's clock is paused (it moves only when the runtime waits for a timer),
        // so a deadline counted from `started` fires without moving it, and one counted a
        // whole limit after the first poll would move it by that limit.
        let call = async {
            std::thread::sleep(Duration::from_millis(20));
            std::future::pending::<()>().await;
        };
        let paused = tokio::time::Instant::now();
        let out = within(Duration::from_millis(10), Instant::now(), call).await;
        assert!(out.is_err());
        assert_eq!(paused.elapsed(), Duration::ZERO);
    }
}
