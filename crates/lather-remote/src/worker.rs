//! The worker side: answer request frames for the hosted handlers, in a queue group per
//! handler so several workers share the load.

use crate::frame::{Answer, Outcome, Request, WorkerTiming};
use crate::{Link, LinkError, rebuild_message};
use bytes::Bytes;
use futures_util::StreamExt;
use lather_envelope::{Fault, FaultKind, Limits};
use lather_pipeline::{Handler, Options, Step, Verdict};
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio::task::JoinSet;
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
    let arrived = Instant::now();
    let (id, handler_time, outcome) = match Request::decode(frame) {
        Err(e) => (
            0,
            Duration::ZERO,
            Outcome::Fault(Fault::with_reason(
                FaultKind::HandlerFailed,
                format!(
                    "worker for {}: the request frame is unreadable: {e}",
                    hosted.name
                ),
            )),
        ),
        Ok(request) => {
            let trace = request
                .trace
                .as_deref()
                .and_then(crate::trace_id)
                .unwrap_or("");
            let span = tracing::debug_span!("remote call", handler = %hosted.name, trace_id = %trace, attempt = request.attempt);
            let (outcome, handler_time) = run(hosted, &request, limits).instrument(span).await;
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
        outcome,
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
            outcome: Outcome::Fault(fault),
        }
        .encode()
        .unwrap_or_default()
    })
}

/// Runs the request's handler; the outcome and the time the handler's stage took.
async fn run(hosted: &Hosted, request: &Request, limits: &Limits) -> (Outcome, Duration) {
    if request.handler != hosted.name {
        let fault = Outcome::Fault(Fault::with_reason(
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
        return (Outcome::Fault(fault), Duration::ZERO);
    }
    let message = match rebuild_message(request, limits) {
        Ok(message) => message,
        Err(fault) => return (Outcome::Fault(fault), Duration::ZERO),
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
        Verdict::Continue(patch) => Outcome::Continue(patch),
        Verdict::Respond(envelope) => Outcome::Respond(envelope.as_bytes().clone()),
        Verdict::Fault(fault) => Outcome::Fault(fault),
    };
    (outcome, handler_time)
}

/// Requests a worker handles at once unless told otherwise.
pub const DEFAULT_CONCURRENCY: usize = 64;

/// Serves `hosted` through the connected `link` until `shutdown` completes: one queue
/// subscription per handler (group `{prefix}.workers.{name}`); a oneway handler instead
/// pulls from its durable consumer on the JetStream work queue ([`crate::oneway_worker`];
/// the stream and consumer are created if absent, and failing that, so does this). On
/// shutdown it stops taking requests, finishes those in hand, flushes their answers (and
/// acknowledgements) and returns.
pub async fn serve(
    link: &Link,
    hosted: Vec<Hosted>,
    limits: Limits,
    shutdown: impl Future<Output = ()>,
) -> Result<(), LinkError> {
    serve_bounded(link, hosted, limits, DEFAULT_CONCURRENCY, shutdown).await
}

/// [`serve`], handling at most `concurrency` requests at once: further requests wait in
/// the subscription (and, past NATS's buffer, at the requester, which times out and
/// retries on another worker), so a worker's memory stays bounded and its capacity is
/// what one process can do — more workers, more capacity.
pub async fn serve_bounded(
    link: &Link,
    hosted: Vec<Hosted>,
    limits: Limits,
    concurrency: usize,
    shutdown: impl Future<Output = ()>,
) -> Result<(), LinkError> {
    let concurrency = concurrency.max(1);
    let client = link.client().ok_or_else(|| LinkError {
        url: link.url().to_owned(),
        why: "not connected".to_owned(),
    })?;
    let limits = Arc::new(limits);
    // Oneway handlers are served from the JetStream work queue, not request/reply.
    let (oneway, hosted): (Vec<Hosted>, Vec<Hosted>) =
        hosted.into_iter().partition(|h| h.options.oneway);
    let (stop_oneway, oneway_stopped) = tokio::sync::watch::channel(false);
    let oneway = if oneway.is_empty() {
        None
    } else {
        let pullers = crate::oneway_worker::prepare(link, oneway).await?;
        let run = crate::oneway_worker::run(pullers, limits.clone(), concurrency, oneway_stopped);
        Some(tokio::spawn(run))
    };
    let mut subscriptions = Vec::new();
    for h in &hosted {
        let subscriber = client
            .queue_subscribe(link.subject(&h.name), link.queue_group(&h.name))
            .await
            .map_err(|e| LinkError {
                url: link.url().to_owned(),
                why: format!("cannot subscribe for {}: {e}", h.name),
            })?;
        tracing::info!(handler = %h.name, subject = %link.subject(&h.name), "hosting");
        subscriptions.push((Arc::new(h.clone()), subscriber));
    }
    // The subscriptions are in place at the server before the worker counts as ready.
    client.flush().await.map_err(|e| LinkError {
        url: link.url().to_owned(),
        why: format!("cannot subscribe: {e}"),
    })?;
    let mut requests = futures_util::stream::select_all(
        subscriptions
            .into_iter()
            .map(|(hosted, sub)| sub.map(move |m| (hosted.clone(), m))),
    );
    let mut in_hand = JoinSet::new();
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            () = &mut shutdown => break,
            next = requests.next(), if in_hand.len() < concurrency && !requests.is_empty() => {
                let Some((hosted, message)) = next else { break };
                let Some(reply) = message.reply.clone() else { continue };
                let client = client.clone();
                let limits = limits.clone();
                in_hand.spawn(async move {
                    let bytes = answer(&hosted, message.payload, &limits).await;
                    if let Err(e) = client.publish(reply, bytes).await {
                        tracing::warn!(handler = %hosted.name, error = %e, "answer not sent");
                    }
                });
            }
            Some(_) = in_hand.join_next(), if !in_hand.is_empty() => {}
        }
    }
    // Dropping a subscriber only tries to unsubscribe (a command that may still be queued
    // when the worker returns); unsubscribing and flushing here means the server routes
    // nothing more to this worker once it has stopped taking requests.
    for stream in requests {
        if let Err(e) = stream.into_inner().unsubscribe().await {
            tracing::warn!(error = %e, "unsubscribing failed");
        }
    }
    if let Err(e) = client.flush().await {
        tracing::warn!(error = %e, "flushing the unsubscriptions failed");
    }
    let _ = stop_oneway.send(true);
    tracing::info!(in_hand = in_hand.len(), "draining");
    while in_hand.join_next().await.is_some() {}
    if let Some(oneway) = oneway
        && let Err(e) = oneway.await
    {
        tracing::warn!(error = %e, "oneway handlers ended abnormally");
    }
    if let Err(e) = client.flush().await {
        tracing::warn!(error = %e, "flushing the last answers failed");
    }
    Ok(())
}
