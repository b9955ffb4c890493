//! The worker of a service's asynchronous replies: makes each kept request's answer through
//! the service as any request (routing, stages, the service), keeps it, then delivers it to
//! the `ReplyTo` with retries — or leaves it to be fetched — and forgets it.

mod answer;
mod shared;

pub(crate) use shared::run as run_shared;

use crate::async_reply::job::{Answer, Job};
use crate::async_reply::{AsyncReplies, post};
use crate::service::Service;
use crate::state::State;
use bytes::Bytes;
use std::sync::Arc;
use std::time::Duration;
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
    let now = answer::unix_now();
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
    let Made::Deliver(answer) = answered(state, service, replies, &mut job).await else {
        return;
    };
    for attempt in 1..=replies.attempts {
        match deliver(state, replies, &job, &answer, attempt).await {
            Delivery::Done => return,
            Delivery::Retry(wait) => tokio::time::sleep(wait).await,
        }
    }
}

/// What making a job's answer came to.
enum Made {
    /// An answer to deliver to the `ReplyTo`.
    Deliver(Answer),
    /// Nothing to deliver: the request cannot be read (the job is forgotten), the answer
    /// is kept for polling, or a one-way operation has none (forgotten).
    Nothing,
    /// The answer of a polled job could not be kept: it would be lost, so the job is to be
    /// worked again.
    NotKept,
}

/// The job's answer: the one kept, or made now and kept.
async fn answered(state: &State, service: &Service, replies: &AsyncReplies, job: &mut Job) -> Made {
    let mut kept = true;
    let answer = match job.answer.clone() {
        Some(answer) => answer,
        None => {
            let Some(answer) = answer::make(state, service, job).await else {
                replies.forget(&job.id).await;
                return Made::Nothing;
            };
            job.answer = Some(answer.clone());
            job.answered_at = Some(answer::unix_now());
            if let Err(fault) = replies.save(job.clone()).await {
                tracing::warn!(id = %job.id, %fault, "an asynchronous answer could not be kept");
                kept = false;
            }
            answer
        }
    };
    if job.is_polled() {
        return if kept { Made::Nothing } else { Made::NotKept };
    }
    if answer.body.is_empty() {
        // A one-way operation: nothing to deliver.
        replies.forget(&job.id).await;
        return Made::Nothing;
    }
    Made::Deliver(answer)
}

/// What comes after one delivery attempt.
enum Delivery {
    /// Delivered, refused by the policy, or the last attempt failed: the job is forgotten.
    Done,
    /// Failed; try again after this wait.
    Retry(Duration),
}

/// Delivery attempt number `attempt` (from 1) of `answer` to the job's `ReplyTo`.
async fn deliver(
    state: &State,
    replies: &AsyncReplies,
    job: &Job,
    answer: &Answer,
    attempt: u32,
) -> Delivery {
    let action = answer::action_of(answer, job, &state.limits);
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
        Ok(()) => tracing::debug!(id = %job.id, attempt, "asynchronous answer delivered"),
        Err(lather_eventing::DeliveryError::Refused(why)) => {
            tracing::warn!(id = %job.id, "asynchronous answer not delivered: {why}");
        }
        Err(e) if attempt < replies.attempts => {
            tracing::debug!(id = %job.id, attempt, "asynchronous answer delivery failed, retrying: {e}");
            return Delivery::Retry(backoff(attempt));
        }
        Err(e) => {
            tracing::warn!(id = %job.id, attempts = replies.attempts, "asynchronous answer not delivered: {e}");
        }
    }
    replies.forget(&job.id).await;
    Delivery::Done
}

/// The wait after failed attempt `attempt`: 0.5 s, doubling, at most [`MAX_BACKOFF`].
fn backoff(attempt: u32) -> Duration {
    Duration::from_millis(500)
        .saturating_mul(1 << attempt.saturating_sub(1).min(16))
        .min(MAX_BACKOFF)
}
