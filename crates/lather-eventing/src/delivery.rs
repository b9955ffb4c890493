//! Push delivery: each subscription has its own bounded queue and its own task with its
//! own connection in its binding (`crate::binding`), so a slow or dead sink only ever
//! delays itself.

use crate::binding::Connection;
use crate::binding::end::{Farewell, FarewellSender};
use crate::gauges::Gauges;
use crate::sink_queue::{Queued, SinkQueue, SinkReceiver};
use crate::{EndStatus, Subscription};
use bytes::Bytes;
use std::sync::{Arc, Weak};
use std::time::Duration;
use tokio::sync::oneshot;

/// How hard delivery tries before it gives a sink up: `attempts` failed connections in
/// a row (HTTP: without an answer in between; TCP bindings: see
/// `binding::tcp::StreamSink`), waiting `first_backoff`, then twice as long each time,
/// between them; then the subscription ends with DeliveryFailure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Failed connections in a row before the sink is given up (at least 1).
    pub attempts: u32,
    /// Wait before the second attempt; doubled before each further one.
    pub first_backoff: Duration,
    /// Longest wait for one write to the sink, for a connection, and for an answer
    /// (service key `sink_write_timeout_ms`).
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

/// Held by a subscription while it lives: dropping it stops the subscription's delivery
/// task at once (whatever it waits for: a write, an answer, a backoff), closing its
/// connection. The subscription ends by expiry, Unsubscribe, DeliveryFailure, the source's
/// cancel or shut down, or the source being dropped.
#[derive(Debug)]
pub(crate) struct Stop {
    _sender: oneshot::Sender<()>,
}

/// What a sink's delivery is given: its queue's bounds and the source's gauges.
pub(crate) struct SinkLimits {
    /// Most notifications queued.
    pub(crate) capacity: usize,
    /// Most bytes queued or being delivered.
    pub(crate) bytes: u64,
    pub(crate) gauges: Arc<Gauges>,
}

/// Starts `sub`'s delivery task in its binding and returns its queue, the way to hand
/// it a last frame (a SubscriptionEnd on a TCP binding's stream, written once the queue is
/// dropped and drained: `crate::binding::end`) and its [`Stop`]. Notifications of at
/// least `gzip_from` bytes are gzip-compressed (none if `None`). When every attempt fails
/// the task asks `source` to end the subscription with DeliveryFailure.
pub(crate) fn spawn_sink(
    sub: &Subscription,
    limits: SinkLimits,
    policy: RetryPolicy,
    probe: Option<DeliveryProbe>,
    gzip_from: Option<usize>,
    source: Weak<crate::source::Inner>,
) -> (SinkQueue, FarewellSender, Stop) {
    let (tx, mut rx) = SinkQueue::new(limits.capacity, limits.bytes, limits.gauges.clone());
    let (farewell_tx, farewell) = oneshot::channel::<Farewell>();
    let (stop, mut stopped) = oneshot::channel::<()>();
    let id = sub.id.clone();
    let address = sub.notify_to.address.clone();
    let guard = source
        .upgrade()
        .map(|s| s.settings.notify_policy.clone())
        .unwrap_or_default();
    let mut connection = Connection::open(sub, policy, gzip_from, limits.capacity, &guard);
    let alive = limits.gauges.task();
    tokio::spawn(async move {
        let _alive = alive;
        let ready = |events: &[Queued]| {
            if let Some(probe) = &probe {
                let now = crate::event::unix_ns();
                for event in events {
                    (probe.0)(&id, event.seq, event.published_ns, now);
                }
            }
        };
        let result = tokio::select! {
            // The subscription has ended: stop now, dropping the connection and the queue.
            _ = &mut stopped => return,
            result = run(&mut connection, &mut rx, &ready) => result,
        };
        if let Err(why) = result {
            tracing::warn!(subscription = %id, %address, "delivery failed: {why}");
            drop(connection);
            drop(rx);
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
        tokio::select! {
            _ = &mut stopped => {}
            last = farewell => {
                if let Ok(last) = last {
                    let _ = last.done.send(connection.finish(&last.bytes).await);
                }
            }
        }
    });
    (tx, farewell_tx, Stop { _sender: stop })
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
    rx: &mut SinkReceiver,
    ready: &(dyn Fn(&[Queued]) + Send + Sync),
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
                let delivered = connection.deliver(&mut batch, ready).await;
                batch.clear();
                delivered?;
            }
        }
    }
}
