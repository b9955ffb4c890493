//! Running a plan over one message: stages in order, the handlers of a stage at the same
//! time, their patches merged after the stage.

use crate::attempt::{Failure, failure_fault, perform};
use crate::cpu_pool::{self, CpuPool};
use crate::plan::{Counters, Step};
use crate::{Message, Plan, Verdict, Work};
use lather_envelope::{Edit, EditError, Envelope, Fault, FaultKind, Limits};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use tracing::Instrument;

/// How a message left the plan.
#[derive(Debug, Clone)]
#[expect(
    clippy::large_enum_variant,
    reason = "returned once per message and moved on at once; boxing would allocate on the common path"
)]
pub enum Outcome {
    /// Every stage passed; the message with all patches applied.
    Continue(Message),
    /// A handler answered the requester itself.
    Respond(Box<Envelope>),
    /// A `must_perform` handler failed or faulted.
    Fault(Fault),
}

type Pending = Pin<Box<dyn Future<Output = Settled> + Send>>;

/// A handler's result, its patch already turned into edits of the stage's snapshot on the
/// handler's own task (so the new parts of a stage's patches are checked in parallel, on the
/// CPU pool for CPU-bound handlers, not one after another after the stage).
struct Settled {
    result: Result<Verdict, Failure>,
    /// For [`Verdict::Continue`]: the patch's edits, or why the patch is refused.
    edits: Result<Vec<Edit>, Fault>,
}

impl Settled {
    fn new(step: &Step, snapshot: &Message, result: Result<Verdict, Failure>) -> Settled {
        let edits = match &result {
            Ok(Verdict::Continue(patch)) => edits_of(step, snapshot, patch),
            _ => Ok(Vec::new()),
        };
        Settled { result, edits }
    }
}

/// The edits `patch` makes to `snapshot`; refused if it writes a part `step` does not declare
/// or a new part is not well-formed.
fn edits_of(step: &Step, snapshot: &Message, patch: &crate::Patch) -> Result<Vec<Edit>, Fault> {
    if let Some(part) = patch.undeclared_write(step.access()) {
        return Err(Fault::with_reason(
            FaultKind::HandlerFailed,
            format!(
                "handler {} wrote {part}, which its access does not declare",
                step.name()
            ),
        ));
    }
    let mut edits = Vec::new();
    patch
        .edits_for(snapshot.envelope(), &mut edits)
        .map_err(|f| {
            Fault::with_reason(
                FaultKind::HandlerFailed,
                format!(
                    "handler {} returned an invalid patch: {}",
                    step.name(),
                    f.reason()
                ),
            )
        })?;
    Ok(edits)
}

/// Runs `plan` on `message`. Envelopes produced by merged patches are checked against
/// `limits` like any received message.
pub async fn run(plan: &Plan, message: Message, limits: &Limits) -> Outcome {
    let mut message = message;
    let pool = cpu_pool::current();
    let traced = crate::telemetry::active().is_some();
    for (index, stage) in plan.stages().iter().enumerate() {
        let ran = run_stage(stage, message, limits, &pool);
        let ran = if traced {
            ran.instrument(crate::telemetry::stage_span(index, stage.len()))
                .await
        } else {
            ran.await
        };
        message = match ran {
            Ok(next) => next,
            Err(end) => return end,
        };
    }
    Outcome::Continue(message)
}

async fn run_stage(
    stage: &[Arc<Step>],
    message: Message,
    limits: &Limits,
    pool: &CpuPool,
) -> Result<Message, Outcome> {
    let snapshot = Arc::new(message);
    // The steps waited for, walked twice (to start them, then to read their results in
    // stage order) rather than gathered in a list of their own.
    let waited = || stage.iter().filter(|s| !s.options().oneway);
    for step in stage.iter().filter(|s| s.options().oneway) {
        spawn_oneway(step.clone(), snapshot.clone(), pool.clone());
    }
    let mut calls: Vec<Option<Pending>> = Vec::with_capacity(stage.len());
    calls.extend(waited().map(|step| Some(start(step, &snapshot, pool))));
    let results = settle_all(calls).await;

    let mut edits: Vec<Edit> = Vec::new();
    let mut properties: Vec<crate::Property> = Vec::new();
    let mut response = None;
    // Every slot is filled once `settle_all` returns.
    for (step, settled) in waited().zip(results.into_iter().flatten()) {
        let failed = match settled.result {
            Ok(Verdict::Continue(patch)) => match settled.edits {
                Ok(made) => {
                    properties.extend(patch.properties().cloned());
                    edits.extend(made);
                    None
                }
                Err(fault) => Some(fault),
            },
            Ok(Verdict::Respond(envelope)) => {
                response.get_or_insert(envelope);
                None
            }
            Ok(Verdict::Fault(fault)) => Some(fault),
            Err(failure) => Some(failure_fault(step, failure)),
        };
        if let Some(fault) = failed {
            if step.options().must_perform {
                return Err(Outcome::Fault(fault));
            }
            Counters::bump(&step.counters().ignored_failures);
            tracing::warn!(handler = step.name(), %fault, "failure ignored (must_perform = false)");
        }
    }
    if let Some(envelope) = response {
        return Err(Outcome::Respond(envelope));
    }
    let message = Arc::unwrap_or_clone(snapshot).with_properties(&properties);
    if edits.is_empty() {
        return Ok(message);
    }
    // Only the new parts are looked at: the rest was checked when the message was parsed.
    let envelope = message.envelope().edited(&edits, limits).map_err(|e| {
        let reason = match e {
            EditError::Invalid(f) => {
                format!(
                    "the patched message is not a valid envelope: {}",
                    f.reason()
                )
            }
            other => format!("the patches of one stage could not be merged: {other}"),
        };
        Outcome::Fault(Fault::with_reason(FaultKind::HandlerFailed, reason))
    })?;
    Ok(message.with_envelope(envelope))
}

/// Runs `calls` together until each has settled, and gives their results in the calls'
/// order. Each call is polled in turn at every wake-up until it settles, and dropped then
/// (its share of the stage's snapshot with it). A join of its own rather than `join_all`,
/// whose slots, each the size of a result, moved every result about five times more.
async fn settle_all(mut calls: Vec<Option<Pending>>) -> Vec<Option<Settled>> {
    let mut settled: Vec<Option<Settled>> = Vec::with_capacity(calls.len());
    settled.resize_with(calls.len(), || None);
    let mut unsettled = calls.len();
    std::future::poll_fn(|cx| {
        for (call, slot) in calls.iter_mut().zip(settled.iter_mut()) {
            let Some(running) = call else {
                continue;
            };
            if let Poll::Ready(result) = running.as_mut().poll(cx) {
                *slot = Some(result);
                *call = None;
                unsettled -= 1;
            }
        }
        if unsettled == 0 {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    })
    .await;
    settled
}

/// Whether `step` goes to the CPU pool: CPU-bound, and not measured as cheaper than the
/// hand-off to the pool and back (the pool's [inline threshold](CpuPool::inline_below)).
fn on_pool(step: &Step, pool: &CpuPool) -> bool {
    step.options().work == Work::Cpu && !step.cost().is_below(pool.inline_threshold())
}

/// The handler's call: CPU-bound handlers on the CPU pool (never on the I/O threads, and
/// so a stage's CPU work spreads over cores), I/O-bound and short ones inline.
fn start(step: &Arc<Step>, snapshot: &Arc<Message>, pool: &CpuPool) -> Pending {
    let step = step.clone();
    let message = snapshot.clone();
    let span = crate::telemetry::handler_span(step.name());
    if on_pool(&step, pool) {
        let task = pool.handle().spawn(async move {
            let result = traced_perform(&step, &message, span).await;
            Settled::new(&step, &message, result)
        });
        Box::pin(async move {
            task.await.unwrap_or_else(|e| Settled {
                result: Err(Failure::Panicked(format!("handler task ended: {e}"))),
                edits: Ok(Vec::new()),
            })
        })
    } else if span.is_none() {
        // Traces not exported: the call without a span to enter and leave at every poll.
        // Chosen here, where the box is made, not inside `traced_perform`: there the choice
        // made every call's future the size of the traced one, and each box copied it
        // (42 860 instructions per request with five handlers, and 43 450 as an async
        // function of its own, against 42 495 this way).
        Box::pin(async move {
            let result = perform(&step, &message).await;
            Settled::new(&step, &message, result)
        })
    } else {
        Box::pin(async move {
            let result = traced_perform(&step, &message, span).await;
            Settled::new(&step, &message, result)
        })
    }
}

/// [`perform`] in `span`, the handler's `soap.handler` span (created by the caller in its
/// stage's span, so a handler moved to another task stays a child of its stage), recording
/// how the handler ended; `span` is [`tracing::Span::none`] when traces are not exported.
fn traced_perform<'a>(
    step: &'a Step,
    message: &'a Message,
    span: tracing::Span,
) -> impl Future<Output = Result<Verdict, Failure>> + Send + 'a {
    let recorded = span.clone();
    async move {
        let result = perform(step, message).await;
        if !recorded.is_none() {
            let outcome = match &result {
                Ok(Verdict::Continue(_)) => "continue",
                Ok(Verdict::Respond(_)) => "respond",
                Ok(Verdict::Fault(_)) => "fault",
                Err(_) => "failed",
            };
            recorded.record("lather.handler.outcome", outcome);
        }
        result
    }
    .instrument(span)
}

/// Runs a oneway handler without waiting for it; its failures are counted.
fn spawn_oneway(step: Arc<Step>, message: Arc<Message>, pool: CpuPool) {
    let pooled = on_pool(&step, &pool);
    let span = crate::telemetry::handler_span(step.name());
    let task = async move {
        match traced_perform(&step, &message, span).await {
            Ok(Verdict::Continue(_) | Verdict::Respond(_)) => {}
            Ok(Verdict::Fault(fault)) => {
                Counters::bump(&step.counters().oneway_failures);
                tracing::warn!(handler = step.name(), %fault, "oneway handler faulted");
            }
            Err(failure) => {
                Counters::bump(&step.counters().oneway_failures);
                tracing::warn!(handler = step.name(), ?failure, "oneway handler failed");
            }
        }
    };
    let task = pool.scope(task);
    if pooled {
        pool.handle().spawn(task);
    } else {
        tokio::spawn(task);
    }
}
