//! The worker side of oneway handlers: a durable pull consumer per handler on the
//! work-queue stream, messages acknowledged after handling.

use crate::frame::{Answer, CallBatch, RemoteVerdict};
use crate::hosted::{Hosted, answer};
use crate::oneway_stream::ensure_stream;
use crate::{Link, LinkError};
use async_nats::jetstream::{self, AckKind, consumer};
use bytes::Bytes;
use futures_util::StreamExt;
use lather_envelope::Limits;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{Semaphore, watch};
use tokio::task::JoinSet;

/// How much longer than the handler's timeout JetStream waits for a worker's
/// acknowledgement before it gives the message to another worker.
pub const ACK_GRACE: Duration = Duration::from_secs(1);

/// Deliveries of one message JetStream makes. A message delivered this many times was
/// taken by `MAX_DELIVER - 1` workers that never acknowledged it (each died or hung while
/// handling it): the last delivery terminates it unhandled and logs it, so a message that
/// kills workers stops doing so.
pub const MAX_DELIVER: i64 = 5;

/// How long one pull waits for messages before asking again (and looking at shutdown).
const PULL_WAIT: Duration = Duration::from_millis(500);

/// The durable consumer name of oneway handler `name`: `oneway-{name}`, each character a
/// consumer name may not hold made `_`.
pub fn consumer_name(name: &str) -> String {
    let name: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("oneway-{name}")
}

/// The consumer configuration of `hosted` on `link`'s stream.
pub fn consumer_config(link: &Link, hosted: &Hosted) -> consumer::pull::Config {
    consumer::pull::Config {
        durable_name: Some(consumer_name(&hosted.name)),
        description: Some(format!("lather workers for oneway handler {}", hosted.name)),
        filter_subject: link.oneway_subject(&hosted.name),
        ack_policy: consumer::AckPolicy::Explicit,
        ack_wait: hosted.options.timeout + ACK_GRACE,
        max_deliver: MAX_DELIVER,
        deliver_policy: consumer::DeliverPolicy::All,
        ..Default::default()
    }
}

/// A oneway handler ready to be served: the hosted handler and its durable consumer.
pub struct Puller {
    hosted: Arc<Hosted>,
    consumer: consumer::PullConsumer,
}

impl std::fmt::Debug for Puller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Puller")
            .field("handler", &self.hosted.name)
            .finish_non_exhaustive()
    }
}

/// Makes ready to serve the oneway handlers `hosted` through the connected `link`: opens
/// the stream and each handler's durable consumer, creating them when absent. Fails (naming
/// the URL) when JetStream refuses, e.g. a server without JetStream.
pub async fn prepare(link: &Link, hosted: Vec<Hosted>) -> Result<Vec<Puller>, LinkError> {
    let error = |why: String| LinkError {
        url: link.url().to_owned(),
        why,
    };
    let client = link
        .client()
        .ok_or_else(|| error("not connected".to_owned()))?;
    let js = jetstream::new(client.clone());
    let stream = ensure_stream(link, &js)
        .await
        .map_err(|e| error(e.to_string()))?;
    let mut pullers = Vec::new();
    for h in hosted {
        let name = consumer_name(&h.name);
        let consumer = stream
            .get_or_create_consumer(&name, consumer_config(link, &h))
            .await
            .map_err(|e| error(format!("JetStream consumer {name}: {e}")))?;
        tracing::info!(handler = %h.name, subject = %link.oneway_subject(&h.name), consumer = %name, "hosting oneway");
        pullers.push(Puller {
            hosted: Arc::new(h),
            consumer,
        });
    }
    Ok(pullers)
}

/// Serves `pullers` until `stop` turns true: pulls messages in batches while fewer than
/// `concurrency` are in hand (across these handlers), runs each through [`answer`] (faults
/// are logged, the answer is otherwise dropped) and acknowledges it afterwards. On stop it
/// pulls no more, finishes and acknowledges those in hand, and returns.
pub async fn run(
    pullers: Vec<Puller>,
    limits: Arc<Limits>,
    concurrency: usize,
    stop: watch::Receiver<bool>,
) {
    let slots = Arc::new(Semaphore::new(concurrency.max(1)));
    let mut tasks = JoinSet::new();
    for p in pullers {
        tasks.spawn(pull(
            p.hosted,
            p.consumer,
            limits.clone(),
            slots.clone(),
            stop.clone(),
        ));
    }
    while tasks.join_next().await.is_some() {}
}

/// Pulls and handles `hosted`'s messages until `stop`, then drains.
async fn pull(
    hosted: Arc<Hosted>,
    consumer: consumer::PullConsumer,
    limits: Arc<Limits>,
    slots: Arc<Semaphore>,
    mut stop: watch::Receiver<bool>,
) {
    let mut in_hand = JoinSet::new();
    while !*stop.borrow() {
        // At least one free slot, then as many more as are free: the batch size.
        let first = tokio::select! {
            _ = stop.changed() => break,
            permit = slots.clone().acquire_owned() => match permit {
                Ok(permit) => permit,
                Err(_) => break,
            },
        };
        let mut permits = vec![first];
        while let Ok(permit) = slots.clone().try_acquire_owned() {
            permits.push(permit);
        }
        let batch = consumer
            .batch()
            .max_messages(permits.len())
            .expires(PULL_WAIT)
            .messages()
            .await;
        let mut batch = match batch {
            Ok(batch) => batch,
            Err(e) => {
                tracing::warn!(handler = %hosted.name, error = %e, "pulling failed");
                drop(permits);
                tokio::select! {
                    _ = stop.changed() => break,
                    () = tokio::time::sleep(PULL_WAIT) => continue,
                }
            }
        };
        // The messages asked for are handled even if stop comes meanwhile: they were
        // delivered to this worker and would otherwise wait out the ack wait.
        while let Some(next) = batch.next().await {
            let message = match next {
                Ok(message) => message,
                Err(e) => {
                    tracing::debug!(handler = %hosted.name, error = %e, "pull ended");
                    break;
                }
            };
            let Some(permit) = permits.pop() else { break };
            let hosted = hosted.clone();
            let limits = limits.clone();
            in_hand.spawn(async move {
                handle(&hosted, message, &limits).await;
                drop(permit);
            });
        }
        drop(permits);
        while in_hand.try_join_next().is_some() {}
    }
    tracing::info!(handler = %hosted.name, in_hand = in_hand.len(), "draining oneway");
    while in_hand.join_next().await.is_some() {}
}

/// Handles one delivered message and acknowledges it (or terminates it on its last
/// delivery, unhandled).
async fn handle(hosted: &Hosted, message: jetstream::Message, limits: &Limits) {
    let (delivered, sequence) = message
        .info()
        .map_or((1, 0), |i| (i.delivered, i.stream_sequence));
    if delivered >= MAX_DELIVER {
        tracing::error!(
            handler = %hosted.name,
            stream_sequence = sequence,
            delivered,
            "oneway message never acknowledged after {} deliveries: terminated unhandled",
            delivered - 1
        );
        if let Err(e) = message.ack_with(AckKind::Term).await {
            tracing::warn!(handler = %hosted.name, error = %e, "terminating failed");
        }
        return;
    }
    if CallBatch::is_batch(&message.payload) {
        // A batch of hand-offs: each frame handled, the message acknowledged after all.
        match CallBatch::decode(message.payload.clone()) {
            Ok(batch) => {
                let runs = batch
                    .items
                    .into_iter()
                    .map(|item| handle_frame(hosted, item.frame, limits, delivered));
                futures_util::future::join_all(runs).await;
            }
            Err(e) => {
                tracing::warn!(handler = %hosted.name, error = %e, "an unreadable batch of oneway messages is dropped");
            }
        }
    } else {
        handle_frame(hosted, message.payload.clone(), limits, delivered).await;
    }
    if let Err(e) = message.ack().await {
        tracing::warn!(handler = %hosted.name, error = %e, "acknowledging failed");
    }
}

/// Handles one oneway frame (delivery `delivered`); a fault is logged, the answer
/// otherwise dropped.
async fn handle_frame(hosted: &Hosted, frame: Bytes, limits: &Limits, delivered: i64) {
    let bytes = answer(hosted, frame, limits).await;
    match Answer::decode(bytes) {
        Ok(Answer {
            verdict: RemoteVerdict::Fault(fault),
            id,
            ..
        }) => {
            tracing::warn!(handler = %hosted.name, id = %format!("{id:032x}"), delivered, %fault, "oneway handler faulted");
        }
        Ok(_) => {}
        Err(e) => tracing::warn!(handler = %hosted.name, error = %e, "oneway answer unreadable"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn consumer_names_hold_no_subject_separators() {
        assert_eq!(consumer_name("audit"), "oneway-audit");
        assert_eq!(consumer_name("a.b c*>"), "oneway-a_b_c__");
    }
}
