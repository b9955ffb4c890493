//! The worker of a service's asynchronous replies: makes each kept request's answer through
//! the service as any request (routing, stages, the service), keeps it, then delivers it to
//! the `ReplyTo` with retries — or leaves it to be fetched — and forgets it.

use crate::async_reply::job::{Answer, Job};
use crate::async_reply::{AsyncReplies, post};
use crate::dispatch;
use crate::service::Service;
use crate::state::State;
use crate::timing::Timeline;
use bytes::Bytes;
use lather_envelope::{Edit, Envelope, EnvelopeBuilder, QName};
use lather_pipeline::Context;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio::sync::{Semaphore, mpsc, watch};

/// Answers made at once by one service's worker.
const AT_ONCE: usize = 32;
/// The longest wait between two delivery attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// How long one delivery attempt may take.
const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(10);

/// Runs until `stopping` turns true: first the jobs kept from before, then each job the
/// service accepts; polled answers past their time are dropped.
pub(crate) async fn run(
    state: Arc<State>,
    service: Arc<Service>,
    replies: Arc<AsyncReplies>,
    mut jobs: mpsc::UnboundedReceiver<String>,
    mut stopping: watch::Receiver<bool>,
) {
    let limit = Arc::new(Semaphore::new(AT_ONCE));
    let start = |job: Job| {
        let (state, service, replies, limit) = (
            state.clone(),
            service.clone(),
            replies.clone(),
            limit.clone(),
        );
        tokio::spawn(async move {
            let Ok(_slot) = limit.acquire_owned().await else {
                return;
            };
            process(&state, &service, &replies, job).await;
        });
    };
    match replies.kept().await {
        Ok(kept) => {
            if !kept.is_empty() {
                tracing::info!(service = %service.name, jobs = kept.len(), "resuming kept asynchronous requests");
            }
            for job in kept {
                if !(job.is_polled() && job.answer.is_some()) {
                    start(job);
                }
            }
        }
        Err(fault) => {
            tracing::error!(service = %service.name, %fault, "kept asynchronous requests cannot be read")
        }
    }
    let mut sweep = tokio::time::interval(Duration::from_secs(5));
    loop {
        tokio::select! {
            id = jobs.recv() => match id {
                Some(id) => {
                    if let Some(job) = replies.job(&id).await {
                        start(job);
                    }
                }
                None => return,
            },
            _ = sweep.tick() => expire(&replies).await,
            _ = stopping.changed() => return,
        }
    }
}

/// Drops polled answers kept longer than `reply_keep_s`.
async fn expire(replies: &AsyncReplies) {
    if replies.pending() == 0 {
        return;
    }
    let now = unix_now();
    let Ok(kept) = replies.kept().await else {
        return;
    };
    for job in kept {
        if job.is_polled()
            && job
                .answered_at
                .is_some_and(|at| now.saturating_sub(at) > replies.keep.as_secs())
        {
            tracing::info!(id = %job.id, "a polled answer was not fetched in time and is dropped");
            replies.forget(&job.id).await;
        }
    }
}

async fn process(state: &State, service: &Service, replies: &AsyncReplies, mut job: Job) {
    let answer = match job.answer.clone() {
        Some(answer) => answer,
        None => {
            let Some(answer) = make_answer(state, service, &job).await else {
                replies.forget(&job.id).await;
                return;
            };
            job.answer = Some(answer.clone());
            job.answered_at = Some(unix_now());
            if let Err(fault) = replies.save(job.clone()).await {
                tracing::warn!(id = %job.id, %fault, "an asynchronous answer could not be kept");
            }
            answer
        }
    };
    if job.is_polled() {
        return;
    }
    if answer.body.is_empty() {
        // A one-way operation: nothing to deliver.
        replies.forget(&job.id).await;
        return;
    }
    let action = Envelope::parse(Bytes::from(answer.body.clone()), &state.limits)
        .ok()
        .and_then(|e| {
            let block = e.header(&QName::new(job.wsa_ns.as_str(), "Action"))?;
            e.header_text(block)
        });
    let mut wait = Duration::from_millis(500);
    for attempt in 1..=replies.attempts {
        let sent = post(
            &replies.policy,
            &job.reply_to,
            job.version(),
            action.as_deref(),
            Bytes::from(answer.body.clone()),
            ATTEMPT_TIMEOUT,
        )
        .await;
        match sent {
            Ok(()) => {
                tracing::debug!(id = %job.id, attempt, "asynchronous answer delivered");
                replies.forget(&job.id).await;
                return;
            }
            Err(lather_eventing::DeliveryError::Refused(why)) => {
                tracing::warn!(id = %job.id, "asynchronous answer not delivered: {why}");
                break;
            }
            Err(e) if attempt < replies.attempts => {
                tracing::debug!(id = %job.id, attempt, "asynchronous answer delivery failed, retrying: {e}");
                tokio::time::sleep(wait).await;
                wait = (wait * 2).min(MAX_BACKOFF);
            }
            Err(e) => {
                tracing::warn!(id = %job.id, attempts = replies.attempts, "asynchronous answer not delivered: {e}");
            }
        }
    }
    replies.forget(&job.id).await;
}

/// The service's answer to the job's request, with `RelatesTo` (and `To`) added when the
/// stages did not write them; `None` when the kept request cannot be read any more.
async fn make_answer(state: &State, service: &Service, job: &Job) -> Option<Answer> {
    let version = job.version();
    let envelope = match Envelope::parse(Bytes::from(job.request.clone()), &state.limits) {
        Ok(envelope) => envelope,
        Err(fault) => {
            tracing::warn!(id = %job.id, %fault, "a kept asynchronous request cannot be read");
            return None;
        }
    };
    let mut request = http::Request::builder()
        .method(http::Method::POST)
        .uri(service.path.as_str())
        .body(())
        .ok()?;
    // The action was an HTTP header value when the request came.
    *request.headers_mut() = lather_client::soap_headers(version, job.action.as_deref()).ok()?;
    let parts = request.into_parts().0;
    let mut context = Context {
        id: crate::flows::next_message_id(),
        service: service.name.clone(),
        action: job.action.clone(),
        ..Context::default()
    };
    let mut untimed = Timeline::disabled(Instant::now());
    let answered = Box::pin(dispatch::handle_envelope(
        state,
        service,
        &parts,
        envelope,
        &mut context,
        &mut untimed,
    ))
    .await
    .unwrap_or_else(|fault| crate::respond::fault(&fault, version));
    let (head, body) = crate::respond::into_parts(answered);
    let body = related(body, job, &state.limits);
    Some(Answer {
        status: head.status.as_u16(),
        body: String::from_utf8_lossy(&body).into_owned(),
    })
}

/// `body` with the job's `RelatesTo` and `To` in its WS-Addressing namespace, when it is
/// an envelope without them.
fn related(body: Bytes, job: &Job, limits: &lather_envelope::Limits) -> Bytes {
    let Ok(envelope) = Envelope::parse(body.clone(), limits) else {
        return body;
    };
    let ns = job.wsa_ns.as_str();
    let mut edits = Vec::new();
    for (local, text) in [
        ("RelatesTo", job.id.as_str()),
        ("To", job.reply_to.as_str()),
    ] {
        if envelope.header(&QName::new(ns, local)).is_none()
            && let Ok(edit) =
                Edit::add_header(EnvelopeBuilder::text_element(ns, "wsa", local, text))
        {
            edits.push(edit);
        }
    }
    envelope.write(&edits).unwrap_or(body)
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
