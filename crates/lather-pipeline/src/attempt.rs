//! One handler's call for one message: timeout, panic containment, retries with backoff.

use crate::plan::{Counters, Step};
use crate::{Message, Verdict};
use futures_util::FutureExt;
use std::panic::AssertUnwindSafe;

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
