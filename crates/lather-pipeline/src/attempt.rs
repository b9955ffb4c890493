//! One handler's call for one message: timeout, panic containment, retries with backoff.

use crate::plan::{Counters, Step};
use crate::{Message, Verdict};
use futures_util::FutureExt;
use lather_envelope::{Fault, FaultKind};
use std::panic::AssertUnwindSafe;

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
        let call = ATTEMPT.scope(
            attempt,
            AssertUnwindSafe(step.handler().call(message)).catch_unwind(),
        );
        let started = std::time::Instant::now();
        match tokio::time::timeout(options.timeout, call).await {
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
