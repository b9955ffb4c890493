//! What a worker hosts and how it answers one request frame: the handler, its options,
//! and the run that turns a frame into an answer frame (never failing: every problem is a
//! fault answer). The queue-group loop ([`crate::worker`]) and the JetStream pull loop
//! ([`crate::oneway_worker`]) both answer through here.

use crate::frame::{Answer, CallRequest, FrameError, RemoteVerdict, WorkerTiming};
use crate::rebuild_message;
use bytes::Bytes;
use lather_envelope::{Fault, FaultKind, Limits};
use lather_pipeline::{Handler, Options, Step, Verdict};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tracing::Instrument;

/// A handler a worker hosts: its configured name, the handler and its options (the timeout
/// bounds each call together with the request's deadline; the caller does the retrying).
#[derive(Clone)]
pub struct Hosted {
    /// The configured name (the subject's last token).
    pub name: String,
    /// The local handler.
    pub handler: Arc<dyn Handler>,
    /// Its options.
    pub options: Options,
}

impl std::fmt::Debug for Hosted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hosted")
            .field("name", &self.name)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

/// Runs one request frame through `hosted` and gives the answer frame's bytes. Never fails:
/// an unreadable frame, a frame for another handler, parts that do not make an envelope, a
/// timeout or a panic all become a fault answer.
pub async fn answer(hosted: &Hosted, frame: Bytes, limits: &Limits) -> Bytes {
    answer_decoded(hosted, CallRequest::decode(frame), limits, Instant::now()).await
}

/// [`answer`] for a frame already decoded (or refused) on its arrival at `arrived`.
pub(crate) async fn answer_decoded(
    hosted: &Hosted,
    decoded: Result<CallRequest, FrameError>,
    limits: &Limits,
    arrived: Instant,
) -> Bytes {
    let (id, handler_time, outcome) = match decoded {
        Err(e) => (
            0,
            Duration::ZERO,
            RemoteVerdict::Fault(Fault::with_reason(
                FaultKind::HandlerFailed,
                format!(
                    "worker for {}: the request frame is unreadable: {e}",
                    hosted.name
                ),
            )),
        ),
        Ok(request) => {
            // The trace id is read out of the header only when the span is recorded.
            let span = tracing::debug_span!(
                "remote call",
                handler = %hosted.name,
                trace_id = %request.trace.as_deref().and_then(crate::trace_id).unwrap_or(""),
                attempt = request.attempt
            );
            let exported =
                lather_pipeline::telemetry::worker_span(&hosted.name, request.trace.as_deref());
            let (outcome, handler_time) = run(hosted, &request, limits)
                .instrument(span)
                .instrument(exported)
                .await;
            (request.id, handler_time, outcome)
        }
    };
    let micros = |d: Duration| u32::try_from(d.as_micros()).unwrap_or(u32::MAX);
    let mut answer = Answer {
        id,
        timing: WorkerTiming {
            handler_us: micros(handler_time),
            worker_us: 0,
        },
        verdict: outcome,
    };
    // The encoding itself is the one part the worker time cannot include; it is a copy.
    answer.timing.worker_us = micros(arrived.elapsed());
    answer.encode().unwrap_or_else(|e| {
        let fault = Fault::with_reason(
            FaultKind::HandlerFailed,
            format!(
                "worker for {}: the answer cannot be framed: {e}",
                hosted.name
            ),
        );
        Answer {
            id,
            timing: answer.timing,
            verdict: RemoteVerdict::Fault(fault),
        }
        .encode()
        .unwrap_or_default()
    })
}

/// Runs the request's handler; the outcome and the time the handler's stage took.
async fn run(hosted: &Hosted, request: &CallRequest, limits: &Limits) -> (RemoteVerdict, Duration) {
    if request.handler != hosted.name {
        let fault = RemoteVerdict::Fault(Fault::with_reason(
            FaultKind::HandlerFailed,
            format!(
                "worker for {} was sent a request for {}",
                hosted.name, request.handler
            ),
        ));
        return (fault, Duration::ZERO);
    }
    let now_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    let left = Duration::from_millis(request.deadline_unix_ms.saturating_sub(now_ms));
    if left.is_zero() {
        let fault = Fault::with_reason(
            FaultKind::HandlerTimeout,
            format!("handler {}: the request's deadline had passed", hosted.name),
        );
        return (RemoteVerdict::Fault(fault), Duration::ZERO);
    }
    let message = match rebuild_message(request, limits) {
        Ok(message) => message,
        Err(fault) => return (RemoteVerdict::Fault(fault), Duration::ZERO),
    };
    let options = Options {
        retries: 0,
        timeout: hosted.options.timeout.min(left),
        ..hosted.options.clone()
    };
    let step = Step::new(hosted.name.clone(), hosted.handler.clone(), options);
    let started = Instant::now();
    let verdict = step.perform(&message).await;
    let handler_time = started.elapsed();
    let outcome = match verdict {
        Verdict::Continue(patch) => RemoteVerdict::Continue(patch),
        Verdict::Respond(envelope) => RemoteVerdict::Respond(envelope.as_bytes().clone()),
        Verdict::Fault(fault) => RemoteVerdict::Fault(fault),
    };
    (outcome, handler_time)
}
