//! Push delivery: each subscription has its own bounded queue and its own task with its
//! own connection in its binding (`crate::binding`), so a slow or dead sink only ever
//! delays itself.

use crate::binding::Connection;
use crate::binding::end::{Farewell, FarewellSender};
use crate::event::Stamped;
use crate::{EndStatus, Subscription};
use bytes::Bytes;
use std::sync::{Arc, Weak};
use std::time::Duration;
use tokio::sync::mpsc;

/// How hard delivery tries before it gives a sink up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts per notification (at least 1).
    pub attempts: u32,
    /// Wait before the second attempt; doubled before each further one.
    pub first_backoff: Duration,
    /// Longest wait for one attempt's answer.
    pub timeout: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            attempts: 4,
            first_backoff: Duration::from_millis(100),
            timeout: Duration::from_secs(10),
        }
    }
}

/// Told of every notification as its bytes go out: the subscription id, the event's
/// sequence number, its publish time and the time its bytes were ready and handed to the
/// connection (Unix ns; before the POST or the write). For measurements: the difference is
/// the publisher's share of the latency (queueing and rendering).
#[derive(Clone)]
pub struct DeliveryProbe(pub Arc<ProbeFn>);

/// The probe's function: (subscription id, sequence number, published ns, ready ns).
pub type ProbeFn = dyn Fn(&str, u64, u64, u64) + Send + Sync;

impl std::fmt::Debug for DeliveryProbe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DeliveryProbe")
    }
}

/// One message sent outside a subscription's queue (SubscriptionEnd): action, envelope.
#[derive(Debug, Clone)]
pub(crate) struct Outgoing {
    pub(crate) action: String,
    pub(crate) envelope: Bytes,
    /// The `Content-Encoding` of `envelope`, if it is compressed.
    pub(crate) content_encoding: Option<&'static str>,
}

pub(crate) use crate::binding::http::{client, send_once};

/// Most notifications taken from a queue for one delivery (one write on TCP bindings).
const MAX_BATCH: usize = 64;

/// Starts `sub`'s delivery task in its binding and returns its queue, and the way to hand
/// it a last frame (a SubscriptionEnd on a TCP binding's stream, written once the queue is
/// dropped and drained: `crate::binding::end`). Notifications of at least `gzip_from`
/// bytes are gzip-compressed (none if `None`). When every attempt fails the task asks
/// `source` to end the subscription with DeliveryFailure.
pub(crate) fn spawn_sink(
    sub: &Subscription,
    capacity: usize,
    policy: RetryPolicy,
    probe: Option<DeliveryProbe>,
    gzip_from: Option<usize>,
    source: Weak<crate::source::Inner>,
) -> (mpsc::Sender<Arc<Stamped>>, FarewellSender) {
    let (tx, mut rx) = mpsc::channel::<Arc<Stamped>>(capacity.max(1));
    let (farewell_tx, farewell) = tokio::sync::oneshot::channel::<Farewell>();
    let id = sub.id.clone();
    let address = sub.notify_to.address.clone();
    let guard = source
        .upgrade()
        .map(|s| s.settings.notify_policy.clone())
        .unwrap_or_default();
    let mut connection = Connection::open(sub, policy, gzip_from, capacity, &guard);
    tokio::spawn(async move {
        let ready = |events: &[Arc<Stamped>]| {
            if let Some(probe) = &probe {
                let now = crate::event::unix_ns();
                for event in events {
                    (probe.0)(&id, event.seq, event.published_ns, now);
                }
            }
        };
        let result = run(&mut connection, &mut rx, &ready).await;
        if let Err(why) = result {
            tracing::warn!(subscription = %id, %address, "delivery failed: {why}");
            if let Some(source) = source.upgrade() {
                crate::source::end(
                    &source,
                    &id,
                    EndStatus::DeliveryFailure,
                    &format!("notifications to {address} failed: {why}"),
                )
                .await;
            }
            return;
        }
        // The queue is closed and drained: the subscription has ended.
        if let Ok(last) = farewell.await {
            let _ = last.done.send(connection.finish(&last.bytes).await);
        }
    });
    (tx, farewell_tx)
}

/// What the delivery loop does next.
enum Step {
    Answer(Result<bool, String>),
    Batch(usize),
}

/// Delivers what `rx` holds until it is closed and every notification is answered:
/// batches go out as they are taken while earlier ones wait for their answers (HTTP, up to
/// the connection's window), answers (or an overdue one's error) are taken as they come.
/// An error means every retry failed.
async fn run(
    connection: &mut Connection,
    rx: &mut mpsc::Receiver<Arc<Stamped>>,
    ready: &(dyn Fn(&[Arc<Stamped>]) + Send + Sync),
) -> Result<(), String> {
    let mut batch = Vec::with_capacity(MAX_BATCH);
    let mut open = true;
    loop {
        let unsettled = connection.unsettled();
        let take = open && !connection.window_full();
        let step = tokio::select! {
            answer = connection.answer(), if unsettled => Step::Answer(answer),
            n = rx.recv_many(&mut batch, MAX_BATCH), if take => Step::Batch(n),
            else => return Ok(()),
        };
        match step {
            Step::Answer(answer) => connection.on_answer(answer, ready).await?,
            Step::Batch(0) => open = false,
            Step::Batch(_) => {
                let delivered = connection.deliver(&batch, ready).await;
                batch.clear();
                delivered?;
            }
        }
    }
}
