//! Transfer batching of oneway hand-offs (`[nats] batch_max_items` > 1): the frames a
//! oneway remote handler hands over at about the same time go into the JetStream work
//! queue as one message — a [`CallBatch`] whose items have no reply subject — cut at the
//! same cut-offs as remote calls. Every hand-off of a batch ends when JetStream
//! acknowledges the batch; the worker handles each frame and acknowledges the message after
//! the last, so a worker killed meanwhile leaves the whole batch to be delivered again
//! (at-least-once, as for single hand-offs; each frame keeps its message id).
//!
//! A frame alone when the time cut-off passes goes as before, with its own
//! `Nats-Msg-Id`; a batch's is `{a hash of its frames' message ids}.{count}.{handler}`.

use crate::cutoffs::Cutoffs;
use crate::frame::{BatchItem, CallBatch};
use crate::oneway_counters::OnewayCounters;
use crate::oneway_stream::oneway_message_id;
use async_nats::jetstream::{self, context::PublishErrorKind};
use bytes::Bytes;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use tokio::sync::{mpsc, oneshot};

/// Why a hand-off was not stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HandoffError {
    /// JetStream said the stream does not exist (it is created again on the next one).
    pub(crate) stream_missing: bool,
    /// What went wrong.
    pub(crate) why: String,
}

/// One frame waiting for its batch.
struct Handoff {
    id: u128,
    frame: Bytes,
    done: oneshot::Sender<Result<(), HandoffError>>,
}

/// The gatherer of one oneway handler's hand-offs.
#[derive(Debug)]
pub(crate) struct OnewayBatcher {
    queue: mpsc::UnboundedSender<Handoff>,
}

/// What the gatherer publishes through: the JetStream context, the handler's subject and
/// name, its counters.
pub(crate) struct Target {
    pub(crate) js: jetstream::Context,
    pub(crate) subject: String,
    pub(crate) name: String,
    pub(crate) counters: Arc<OnewayCounters>,
}

impl OnewayBatcher {
    /// Starts gathering for `target` (on the current runtime) with `cut`.
    pub(crate) fn start(target: Target, cut: Cutoffs) -> Self {
        let (queue, handoffs) = mpsc::unbounded_channel();
        tokio::spawn(gather(target, cut, handoffs));
        OnewayBatcher { queue }
    }

    /// Hands the frame of message `id` over; ends when JetStream has stored its batch.
    pub(crate) async fn hand_over(&self, id: u128, frame: Bytes) -> Result<(), HandoffError> {
        let (done, told) = oneshot::channel();
        let gone = || HandoffError {
            stream_missing: false,
            why: "the hand-off gatherer stopped".to_owned(),
        };
        self.queue
            .send(Handoff { id, frame, done })
            .map_err(|_| gone())?;
        told.await.map_err(|_| gone())?
    }
}

async fn gather(target: Target, cut: Cutoffs, mut handoffs: mpsc::UnboundedReceiver<Handoff>) {
    let mut carried = None;
    loop {
        let first = match carried.take() {
            Some(first) => first,
            None => match handoffs.recv().await {
                Some(first) => first,
                None => return,
            },
        };
        let batch = cut
            .fill(first, &mut handoffs, &mut carried, |h| h.frame.len() + 6)
            .await;
        send(&target, batch).await;
    }
}

/// Publishes `batch` and, on another task, tells each hand-off how JetStream took it.
async fn send(target: &Target, batch: Vec<Handoff>) {
    // A batch's id stands for all its frames (FNV-1a over their message ids), so a frame
    // sent again among other frames is not taken for the earlier batch it was in.
    let batch_id = batch
        .iter()
        .fold(0x6c62_272e_07bb_0142_62b8_2175_6295_c58du128, |h, f| {
            (h ^ f.id).wrapping_mul(0x0000_0000_0100_0000_0000_0000_0000_013b)
        });
    let count = batch.len();
    let (payload, message_id, done) = if count == 1 {
        let Some(one) = batch.into_iter().next() else {
            return;
        };
        (
            Ok(one.frame),
            oneway_message_id(one.id, &target.name),
            vec![one.done],
        )
    } else {
        let mut done = Vec::with_capacity(count);
        let items = batch
            .into_iter()
            .map(|h| {
                done.push(h.done);
                BatchItem {
                    reply: String::new(),
                    frame: h.frame,
                }
            })
            .collect();
        (
            CallBatch { items }.encode(),
            format!("{batch_id:032x}.{count}.{}", target.name),
            done,
        )
    };
    let tell = |done: Vec<oneshot::Sender<Result<(), HandoffError>>>,
                result: Result<(), HandoffError>| {
        for d in done {
            let _ = d.send(result.clone());
        }
    };
    let payload = match payload {
        Ok(payload) => payload,
        Err(e) => {
            let why = format!("the batch cannot be framed: {e}");
            return tell(
                done,
                Err(HandoffError {
                    stream_missing: false,
                    why,
                }),
            );
        }
    };
    let mut headers = async_nats::HeaderMap::new();
    headers.insert(async_nats::header::NATS_MESSAGE_ID, message_id.as_str());
    let failed = |e: &async_nats::jetstream::context::PublishError| HandoffError {
        stream_missing: e.kind() == PublishErrorKind::StreamNotFound,
        why: format!("JetStream publish failed: {e}"),
    };
    match target
        .js
        .publish_with_headers(target.subject.clone(), headers, payload)
        .await
    {
        Ok(ack) => {
            let counters = target.counters.clone();
            // The acknowledgement is awaited apart, so the next batch goes meanwhile.
            tokio::spawn(async move {
                match ack.await {
                    Ok(_) => {
                        if count > 1 {
                            counters.batches.fetch_add(1, Ordering::Relaxed);
                            counters.batched.fetch_add(
                                u64::try_from(count).unwrap_or(u64::MAX),
                                Ordering::Relaxed,
                            );
                        }
                        tell(done, Ok(()));
                    }
                    Err(e) => tell(done, Err(failed(&e))),
                }
            });
        }
        Err(e) => tell(done, Err(failed(&e))),
    }
}
