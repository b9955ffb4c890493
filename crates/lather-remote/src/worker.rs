//! The worker side: answer request frames for the hosted handlers, in a queue group per
//! handler so several workers share the load.

use crate::frame::{CallBatch, CallRequest, FrameError, Progress, ProgressKind};
use crate::hosted::answer_decoded;
pub use crate::hosted::{Hosted, answer};
use crate::queue_subscriptions::QueueSubscriptions;
use crate::{Link, LinkError};
use bytes::Bytes;
use lather_envelope::Limits;
use lather_pipeline::Work;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

/// Requests a worker handles at once unless told otherwise.
pub const DEFAULT_CONCURRENCY: usize = 64;

/// Requests a worker takes (acknowledges and keeps alive with heartbeats) per request it
/// handles at once: with `concurrency` 64, up to 512 are taken, 64 run and the rest wait
/// their turn. Beyond that the worker reads no more, and callers see their requests not
/// acknowledged (lost: sent to another worker when idempotent).
pub const TAKEN_PER_SLOT: usize = 8;

/// The shortest heartbeat interval a worker keeps (a request asking for less gets this).
pub const MIN_HEARTBEAT: Duration = Duration::from_millis(10);

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

/// [`serve`], handling at most `concurrency` requests at once. A request whose answer is
/// not ready at the first try is acknowledged then, and heartbeated at the interval it
/// asks for until its answer is sent, also while it waits for one of the `concurrency`
/// slots; one answered at once needs neither. At most
/// `concurrency ×` [`TAKEN_PER_SLOT`] requests are taken; further ones wait unread in the
/// subscription, unacknowledged, so their callers count them lost and send them elsewhere —
/// a worker's memory stays bounded and its capacity is what one process can do.
/// CPU-bound handlers run on the blocking pool, so acknowledgements and heartbeats go out
/// while they compute.
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
    let mut requests = QueueSubscriptions::new(subscriptions);
    let names: Vec<&str> = hosted.iter().map(|h| h.name.as_str()).collect();
    tracing::info!(handlers = %names.join(","), "lather worker ready");
    let mut in_hand = JoinSet::new();
    let slots = Arc::new(Semaphore::new(concurrency));
    let most_taken = concurrency.saturating_mul(TAKEN_PER_SLOT);
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            () = &mut shutdown => break,
            next = requests.next(), if in_hand.len() < most_taken && !requests.is_empty() => {
                let Some((hosted, message)) = next else { break };
                let Some(reply) = message.reply.clone() else { continue };
                let arrived = Instant::now();
                let taking = Taking { client, hosted: &hosted, limits: &limits, slots: &slots, arrived };
                if CallBatch::is_batch(&message.payload) {
                    match CallBatch::decode(message.payload) {
                        Ok(batch) => {
                            // One acknowledgement for the whole batch, to its own reply
                            // subject, when all of it fits in what this worker may take;
                            // else each request that fits is acknowledged alone and the
                            // rest are left unread (their callers count them lost).
                            let room = most_taken.saturating_sub(in_hand.len());
                            let whole = batch.items.len() <= room;
                            if whole {
                                let ack = Progress { id: 0, kind: ProgressKind::Ack }.encode();
                                if let Err(e) = client.publish(reply, ack).await {
                                    tracing::warn!(handler = %hosted.name, error = %e, "batch acknowledgement not sent");
                                }
                            }
                            for item in batch.items.into_iter().take(room) {
                                if item.reply.is_empty() {
                                    tracing::warn!(handler = %hosted.name, "a batched request without a reply subject is dropped");
                                    continue;
                                }
                                taking.take(item.reply.into(), item.frame, !whole, &mut in_hand);
                            }
                        }
                        Err(e) => tracing::warn!(handler = %hosted.name, error = %e, "an unreadable batch of requests is dropped"),
                    }
                } else {
                    taking.take(reply, message.payload, true, &mut in_hand);
                }
            }
            Some(_) = in_hand.join_next(), if !in_hand.is_empty() => {}
        }
    }
    // Dropping a subscriber only tries to unsubscribe (a command that may still be queued
    // when the worker returns); unsubscribing and flushing here means the server routes
    // nothing more to this worker once it has stopped taking requests.
    for mut subscriber in requests.into_subscribers() {
        if let Err(e) = subscriber.unsubscribe().await {
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

/// What taking one request needs: the connection, the handler, where its work is bounded.
struct Taking<'a> {
    client: &'a async_nats::Client,
    hosted: &'a Arc<Hosted>,
    limits: &'a Arc<Limits>,
    slots: &'a Arc<Semaphore>,
    arrived: Instant,
}

impl Taking<'_> {
    /// Takes the request frame `payload` whose caller listens on `reply` and starts it in
    /// `in_hand`, its answer sent to `reply`. When it asks for heartbeats and `ack` (not in
    /// a batch acknowledged whole), it is acknowledged unless its answer is ready at the
    /// first try — a handler that completes without waiting answers with no progress
    /// frame at all (the answer tells the caller as much), any other is acknowledged
    /// before it waits for a slot or its work ([`with_heartbeats`]).
    fn take(
        &self,
        reply: async_nats::Subject,
        payload: Bytes,
        ack: bool,
        in_hand: &mut JoinSet<()>,
    ) {
        let decoded = CallRequest::decode(payload);
        let beats = decoded
            .as_ref()
            .ok()
            .filter(|r| r.heartbeat_ms > 0)
            .map(|r| Beats {
                id: r.id,
                every: Duration::from_millis(u64::from(r.heartbeat_ms)).max(MIN_HEARTBEAT),
                ack,
            });
        let taken = Taken {
            hosted: self.hosted.clone(),
            decoded,
            arrived: self.arrived,
            limits: self.limits.clone(),
            slots: self.slots.clone(),
        };
        let client = self.client.clone();
        let heartbeats = beats.map(|beats| (beats, reply.clone()));
        let mut answering = Box::pin(async move {
            let hosted = taken.hosted.clone();
            let bytes = taken.run().await;
            if let Err(e) = client.publish(reply, bytes).await {
                tracing::warn!(handler = %hosted.name, error = %e, "answer not sent");
            }
        });
        // Its first try here: a request answered at once costs no task of its own and no
        // progress frame. Tried with a waker that does nothing: one not answered at once
        // is polled again as the task it then becomes, which registers the task's waker.
        let mut first_try = std::task::Context::from_waker(std::task::Waker::noop());
        if answering.as_mut().poll(&mut first_try).is_ready() {
            return;
        }
        match heartbeats {
            None => in_hand.spawn(answering),
            Some((beats, reply)) => in_hand.spawn(with_heartbeats(
                answering,
                self.client.clone(),
                reply,
                beats,
            )),
        };
    }
}

/// The progress frames a request asked for: its id, the heartbeat interval, and whether
/// it is acknowledged alone (not as part of a batch acknowledged whole).
#[derive(Debug, Clone, Copy)]
struct Beats {
    id: u128,
    every: Duration,
    ack: bool,
}

/// A request a worker took: it waits for a slot, then runs where its kind of work belongs.
struct Taken {
    hosted: Arc<Hosted>,
    decoded: Result<CallRequest, FrameError>,
    arrived: Instant,
    limits: Arc<Limits>,
    slots: Arc<Semaphore>,
}

impl Taken {
    /// The answer frame's bytes. A CPU-bound handler runs on the blocking pool, so it never
    /// holds up acknowledgements and heartbeats; any other runs on the request's own task
    /// (no hand-over to another task: a panicking handler is caught where it is called).
    /// Empty if the blocking task died (the caller refuses that as an unreadable answer, a
    /// `HandlerFailed` fault).
    async fn run(self) -> Bytes {
        let Taken {
            hosted,
            decoded,
            arrived,
            limits,
            slots,
        } = self;
        // The slot and the answer are written out in each branch: a shared async fn or
        // closure costs a move of its future into place on every request (callgrind: 120
        // to 230 more instructions per call).
        if hosted.options.work != Work::Cpu {
            let _slot = slots.acquire_owned().await;
            return answer_decoded(&hosted, decoded, &limits, arrived).await;
        }
        let runtime = tokio::runtime::Handle::current();
        tokio::task::spawn_blocking(move || {
            runtime.block_on(async move {
                let _slot = slots.acquire_owned().await;
                answer_decoded(&hosted, decoded, &limits, arrived).await
            })
        })
        .await
        .unwrap_or_else(|e| {
            tracing::warn!(error = %e, "a worker task ended without an answer");
            Bytes::new()
        })
    }
}

/// Goes on with `answering`, a request not answered at its first try: acknowledges it (if
/// `beats.ack`), then sends a heartbeat to `reply` every `beats.every` until `answering`
/// has sent its answer.
async fn with_heartbeats(
    mut answering: std::pin::Pin<Box<impl Future<Output = ()>>>,
    client: async_nats::Client,
    reply: async_nats::Subject,
    beats: Beats,
) {
    let progress = |kind| Progress { id: beats.id, kind }.encode();
    if beats.ack
        && let Err(e) = client
            .publish(reply.clone(), progress(ProgressKind::Ack))
            .await
    {
        tracing::warn!(error = %e, "acknowledgement not sent");
    }
    let beat = progress(ProgressKind::Heartbeat);
    let mut ticks =
        tokio::time::interval_at(tokio::time::Instant::now() + beats.every, beats.every);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            () = &mut answering => return,
            _ = ticks.tick() => {
                if let Err(e) = client.publish(reply.clone(), beat.clone()).await {
                    tracing::debug!(error = %e, "heartbeat not sent");
                }
            }
        }
    }
}
