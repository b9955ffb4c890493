//! Transfer batching of remote calls (`[nats] batch_max_items` > 1): calls to one handler
//! made at about the same time go to the workers as one NATS message — a [`CallBatch`]
//! of their request frames, each with its caller's reply subject — cut at the seed's two
//! cut-offs: `batch_max_items` calls, or `batch_wait_ms` after the first.
//!
//! One gatherer task per handler subject takes the calls in order. A call alone when the
//! time cut-off passes goes as a plain request (with its own reply subject, so NATS's
//! "no responders" reaches it as always). A batch goes with a reply subject of the
//! gatherer's: the worker acknowledges the whole batch there at once (a progress frame with
//! message id 0), and when NATS answers there that nobody serves the subject, every call of
//! the batch is told. The worker sends each call's heartbeats and answer on its own reply
//! subject, as if it had come alone.

use crate::cutoffs::Cutoffs;
use crate::frame::{BatchItem, CallBatch, Progress, ProgressKind};
use async_nats::StatusCode;
use bytes::Bytes;
use futures_util::StreamExt;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, oneshot};

/// What a batched call hears about its batch (at most once).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum BatchNews {
    /// A worker took the batch (one acknowledgement for all its calls).
    Taken,
    /// NATS answered that no worker serves the subject.
    NoResponders,
    /// The batch could not be sent.
    Unsent(String),
}

/// One call waiting for its batch.
struct Queued {
    reply: String,
    frame: Bytes,
    told: oneshot::Sender<BatchNews>,
}

/// What the gatherer of one subject sent as batches.
#[derive(Debug, Default)]
pub(crate) struct BatchCounters {
    /// NATS messages carrying more than one call.
    pub(crate) batches: AtomicU64,
    /// Calls sent in those.
    pub(crate) calls: AtomicU64,
}

/// The gatherers of a process's remote calls, one per handler subject.
pub(crate) struct FrameBatcher {
    client: async_nats::Client,
    cut: Cutoffs,
    /// How long a sent batch's callers may still be told something: the calls' ack timeout
    /// and the time cut-off, with a second to spare.
    told_for: Duration,
    gatherers: Mutex<HashMap<String, Gatherer>>,
}

/// The queue to one subject's gatherer task, and its counters.
struct Gatherer {
    queue: mpsc::UnboundedSender<Queued>,
    counters: Arc<BatchCounters>,
}

impl std::fmt::Debug for FrameBatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FrameBatcher")
            .field("cut", &self.cut)
            .finish_non_exhaustive()
    }
}

/// The batches sent lately, oldest first, by sequence number: each with when it was sent
/// and the callers to tell.
type Sent = VecDeque<(u64, Instant, Vec<oneshot::Sender<BatchNews>>)>;

impl FrameBatcher {
    /// Batches cut at `cut`, sent through `client`, for calls that wait `ack_timeout` for
    /// their acknowledgement.
    pub(crate) fn new(client: async_nats::Client, cut: Cutoffs, ack_timeout: Duration) -> Self {
        FrameBatcher {
            client,
            cut,
            told_for: ack_timeout + cut.wait + Duration::from_secs(1),
            gatherers: Mutex::new(HashMap::new()),
        }
    }

    /// The time cut-off (a call may wait this long before it is sent).
    pub(crate) fn wait(&self) -> Duration {
        self.cut.wait
    }

    /// Queues the request `frame` to `subject`, its answers expected on `reply`; the
    /// receiver hears when a worker took the batch or it was not delivered.
    pub(crate) fn send(
        &self,
        subject: &str,
        reply: String,
        frame: Bytes,
    ) -> oneshot::Receiver<BatchNews> {
        let (told, hear) = oneshot::channel();
        let queued = Queued { reply, frame, told };
        let mut gatherers = self.lock();
        // The common case: the subject's gatherer runs (no key made for the lookup).
        let queued = match gatherers.get(subject) {
            Some(gatherer) => match gatherer.queue.send(queued) {
                Ok(()) => return hear,
                Err(back) => back.0,
            },
            None => queued,
        };
        let mut queued = queued;
        // A gatherer that ended (its runtime gone) is replaced.
        for _ in 0..2 {
            let gatherer = gatherers.entry(subject.to_owned()).or_insert_with(|| {
                let (queue, calls) = mpsc::unbounded_channel();
                let counters = Arc::new(BatchCounters::default());
                tokio::spawn(gather(
                    self.client.clone(),
                    subject.to_owned(),
                    (self.cut, self.told_for),
                    calls,
                    counters.clone(),
                ));
                Gatherer { queue, counters }
            });
            match gatherer.queue.send(queued) {
                Ok(()) => break,
                Err(back) => {
                    queued = back.0;
                    gatherers.remove(subject);
                }
            }
        }
        hear
    }

    /// The counters of the calls to `subject` (zero before its first call).
    pub(crate) fn counters(&self, subject: &str) -> Arc<BatchCounters> {
        self.lock()
            .get(subject)
            .map(|g| g.counters.clone())
            .unwrap_or_default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Gatherer>> {
        self.gatherers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Gathers the calls to `subject` into batches until every sender is gone.
async fn gather(
    client: async_nats::Client,
    subject: String,
    (cut, told_for): (Cutoffs, Duration),
    mut calls: mpsc::UnboundedReceiver<Queued>,
    counters: Arc<BatchCounters>,
) {
    let inbox = client.new_inbox();
    let sent: Arc<Mutex<Sent>> = Arc::default();
    // The batches' replies (acknowledgements, "no responders") are read on a task of their
    // own, so they reach the callers while the next batch is being gathered.
    let listening = match client.subscribe(format!("{inbox}.*")).await {
        Ok(mut replies) => {
            let sent = sent.clone();
            Some(AbortOnDrop(tokio::spawn(async move {
                while let Some(message) = replies.next().await {
                    tell_callers(&message, &mut lock_sent(&sent));
                }
            })))
        }
        Err(e) => {
            tracing::warn!(%subject, "remote calls go unbatched: cannot subscribe for batch replies: {e}");
            None
        }
    };
    let mut seq = 0u64;
    let mut carried: Option<Queued> = None;
    loop {
        let first = match carried.take() {
            Some(first) => first,
            None => match calls.recv().await {
                Some(first) => first,
                None => return,
            },
        };
        let batch = if listening.is_some() {
            cut.fill(first, &mut calls, &mut carried, |q| {
                q.frame.len() + q.reply.len()
            })
            .await
        } else {
            vec![first]
        };
        if batch.len() > 1 {
            counters.batches.fetch_add(1, Ordering::Relaxed);
            counters.calls.fetch_add(
                u64::try_from(batch.len()).unwrap_or(u64::MAX),
                Ordering::Relaxed,
            );
        }
        seq += 1;
        publish(&client, &subject, (&inbox, seq), batch, &sent).await;
        let now = Instant::now();
        let mut kept = lock_sent(&sent);
        while kept
            .front()
            .is_some_and(|(_, at, _)| now.duration_since(*at) > told_for)
        {
            kept.pop_front();
        }
    }
}

/// Aborts its task when dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

fn lock_sent(sent: &Mutex<Sent>) -> std::sync::MutexGuard<'_, Sent> {
    sent.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Tells the callers of the batch `message` is about: taken (a worker's acknowledgement
/// with message id 0), or that nobody serves the subject.
fn tell_callers(message: &async_nats::Message, sent: &mut Sent) {
    let news = if message.status == Some(StatusCode::NO_RESPONDERS) {
        BatchNews::NoResponders
    } else {
        match Progress::decode(message.payload.clone()) {
            Ok(Progress {
                id: 0,
                kind: ProgressKind::Ack,
            }) => BatchNews::Taken,
            _ => return,
        }
    };
    let Some(n) = message
        .subject
        .rsplit('.')
        .next()
        .and_then(|n| n.parse::<u64>().ok())
    else {
        return;
    };
    // Kept in the order sent, so sorted by sequence number.
    let Ok(i) = sent.binary_search_by_key(&n, |(seq, _, _)| *seq) else {
        return;
    };
    let Some(entry) = sent.get_mut(i) else {
        return;
    };
    for t in std::mem::take(&mut entry.2) {
        let _ = t.send(news.clone());
    }
}

/// Sends `batch` to `subject`: one call as a plain request, more as a [`CallBatch`] with
/// the reply subject `{inbox}.{seq}`, its callers kept in `sent` (before it goes, so no
/// reply can come first) to be told what the workers or NATS say of it.
async fn publish(
    client: &async_nats::Client,
    subject: &str,
    (inbox, seq): (&str, u64),
    mut batch: Vec<Queued>,
    sent: &Mutex<Sent>,
) {
    if batch.len() == 1 {
        let Some(call) = batch.pop() else {
            return;
        };
        if let Err(e) = client
            .publish_with_reply(subject.to_owned(), call.reply, call.frame)
            .await
        {
            let _ = call
                .told
                .send(BatchNews::Unsent(format!("cannot send the request: {e}")));
        }
        return;
    }
    let mut told = Vec::with_capacity(batch.len());
    let items = batch
        .into_iter()
        .map(|call| {
            told.push(call.told);
            BatchItem {
                reply: call.reply,
                frame: call.frame,
            }
        })
        .collect();
    let unsent = |told: Vec<oneshot::Sender<BatchNews>>, why: String| {
        for t in told {
            let _ = t.send(BatchNews::Unsent(why.clone()));
        }
    };
    let bytes = match (CallBatch { items }).encode() {
        Ok(bytes) => bytes,
        Err(e) => return unsent(told, format!("the batch cannot be framed: {e}")),
    };
    lock_sent(sent).push_back((seq, Instant::now(), told));
    if let Err(e) = client
        .publish_with_reply(subject.to_owned(), format!("{inbox}.{seq}"), bytes)
        .await
    {
        let mut kept = lock_sent(sent);
        if let Ok(i) = kept.binary_search_by_key(&seq, |(n, _, _)| *n)
            && let Some(entry) = kept.get_mut(i)
        {
            let told = std::mem::take(&mut entry.2);
            drop(kept);
            unsent(told, format!("cannot send the batch: {e}"));
        }
    }
}
