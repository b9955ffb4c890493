//! The worker of a service whose asynchronous requests sit in JetStream: every node pulls
//! from the stream's one durable consumer, so each request is taken by one node. A request
//! is acknowledged once its answer is delivered (or given up, or kept for polling); a
//! failed delivery is handed back with a delay (`Nak`) for the next attempt, which any
//! node may make — reusing the answer kept in the bucket rather than running the request
//! again. A node that dies with requests in hand leaves them unacknowledged, and JetStream
//! hands them to another node after the ack wait.

use super::{AT_ONCE, Delivery, Made, answered, backoff, deliver};
use crate::async_reply::AsyncReplies;
use crate::async_reply::job::Job;
use crate::async_reply::shared::ACK_WAIT;
use crate::service::Service;
use crate::state::State;
use async_nats::jetstream::{AckKind, Message};
use futures_util::StreamExt;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, watch};

/// Runs until `stopping` turns true, taking at most [`AT_ONCE`] requests at a time.
pub(crate) async fn run(
    state: Arc<State>,
    service: Arc<Service>,
    replies: Arc<AsyncReplies>,
    mut stopping: watch::Receiver<bool>,
) {
    let Some(jobs) = replies.shared_jobs().cloned() else {
        return;
    };
    let limit = Arc::new(Semaphore::new(AT_ONCE));
    loop {
        // One free slot at least, then as many as are free: the size of the fetch.
        let first = tokio::select! {
            slot = limit.clone().acquire_owned() => match slot {
                Ok(slot) => slot,
                Err(_) => return,
            },
            _ = stopping.changed() => return,
        };
        let mut slots = vec![first];
        while let Ok(slot) = limit.clone().try_acquire_owned() {
            slots.push(slot);
        }
        let fetched = tokio::select! {
            fetched = jobs.fetch(slots.len(), FETCH_WAIT) => fetched,
            _ = stopping.changed() => return,
        };
        let mut batch = match fetched {
            Ok(batch) => batch,
            Err(e) => {
                tracing::warn!(service = %service.name, "{e}");
                drop(slots);
                tokio::select! {
                    () = tokio::time::sleep(Duration::from_secs(1)) => continue,
                    _ = stopping.changed() => return,
                }
            }
        };
        // What was fetched is worked even if stop comes meanwhile: it was handed to this
        // node and would otherwise wait out its ack wait.
        // The server ends a fetch after FETCH_WAIT; a fetch NATS left unanswered is given up.
        while let Ok(Some(next)) = tokio::time::timeout(FETCH_WAIT * 2, batch.next()).await {
            let message = match next {
                Ok(message) => message,
                Err(e) => {
                    tracing::debug!(service = %service.name, "pulling asynchronous requests: {e}");
                    break;
                }
            };
            let Some(slot) = slots.pop() else { break };
            let (state, service, replies) = (state.clone(), service.clone(), replies.clone());
            tokio::spawn(async move {
                take(&state, &service, &replies, message, slot).await;
            });
        }
    }
}

/// How long one fetch waits for requests before it is made again.
const FETCH_WAIT: Duration = Duration::from_secs(1);

/// Works one request handed out by JetStream; its delivery count is the attempt number.
async fn take(
    state: &State,
    service: &Service,
    replies: &AsyncReplies,
    message: Message,
    _slot: OwnedSemaphorePermit,
) {
    let mut job: Job = match serde_json::from_slice(&message.payload) {
        Ok(job) => job,
        Err(e) => {
            tracing::warn!(service = %service.name, "an unreadable asynchronous request is dropped: {e}");
            settle(&message, AckKind::Term).await;
            return;
        }
    };
    let attempt = message
        .info()
        .map_or(1, |info| u32::try_from(info.delivered).unwrap_or(u32::MAX));
    // An answer made at an earlier delivery (here or on another node) is reused.
    if let Some(kept) = replies.job(&job.id).await
        && kept.answer.is_some()
    {
        job = kept;
    }
    let making = answered(state, service, replies, &mut job);
    let answer = match keeping_in_hand(&message, making).await {
        Made::Deliver(answer) => answer,
        Made::Nothing => return settle(&message, AckKind::Ack).await,
        // Handed back: the answer is made again at the next delivery.
        Made::NotKept => return settle(&message, AckKind::Nak(Some(backoff(attempt)))).await,
    };
    match deliver(state, replies, &job, &answer, attempt).await {
        Delivery::Done => settle(&message, AckKind::Ack).await,
        Delivery::Retry(wait) => settle(&message, AckKind::Nak(Some(wait))).await,
    }
}

/// Runs `work`, telling JetStream every third of the ack wait that `message` is still in
/// hand, so a slow answer is not handed to another node meanwhile.
async fn keeping_in_hand<T>(message: &Message, work: impl Future<Output = T>) -> T {
    tokio::pin!(work);
    let mut beat = tokio::time::interval(ACK_WAIT / 3);
    beat.tick().await;
    loop {
        tokio::select! {
            done = &mut work => return done,
            _ = beat.tick() => settle(message, AckKind::Progress).await,
        }
    }
}

async fn settle(message: &Message, kind: AckKind) {
    if let Err(e) = message.ack_with(kind).await {
        tracing::debug!("an asynchronous request could not be acknowledged: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::backoff;
    use std::time::Duration;

    #[test]
    fn the_wait_between_attempts_doubles_up_to_thirty_seconds() {
        assert_eq!(backoff(1), Duration::from_millis(500));
        assert_eq!(backoff(2), Duration::from_secs(1));
        assert_eq!(backoff(4), Duration::from_secs(4));
        assert_eq!(backoff(7), Duration::from_secs(30));
        assert_eq!(backoff(u32::MAX), Duration::from_secs(30));
    }
}
