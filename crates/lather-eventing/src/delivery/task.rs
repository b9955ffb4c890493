//! A sink's delivery task: takes notifications from the subscription's queue and hands
//! them to its connection, retrying, until the subscription ends or every retry fails.

use crate::Subscription;
use crate::delivery::DeliveryError;
use crate::delivery::address_policy::DeliveryPolicy;
use crate::delivery::binding::Connection;
use crate::delivery::binding::end::{Farewell, FarewellSender};
use crate::delivery::binding::http::Answered;
use crate::delivery::gauges::Gauges;
use crate::delivery::retry::{DeliveryProbe, RetryPolicy};
use crate::delivery::sink_queue::{Queued, SinkQueue, SinkReceiver};
use futures_util::future::BoxFuture;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::oneshot;
use tokio::time::{Instant, Sleep};

/// What a delivery task calls once every retry failed, with the reason: the owner of the
/// subscription ends it (with DeliveryFailure).
pub(crate) type OnFailure = Box<dyn FnOnce(String) -> BoxFuture<'static, ()> + Send>;

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

/// What a sink's delivery is given: its queue's bounds, the shortest time between two
/// writes and the source's gauges.
pub(crate) struct SinkLimits {
    /// Most notifications queued.
    pub(crate) capacity: usize,
    /// Most bytes queued or being delivered.
    pub(crate) bytes: u64,
    /// Shortest time between two writes (`SourceSettings::delivery_wait`); zero: none.
    pub(crate) wait: Duration,
    pub(crate) gauges: Arc<Gauges>,
}

/// Starts `sub`'s delivery task in its binding and returns its queue, the way to hand
/// it a last frame (a SubscriptionEnd on a TCP binding's stream, written once the queue is
/// dropped and drained: `crate::delivery::binding::end`) and its [`Stop`]. Notifications of at
/// least `gzip_from` bytes are gzip-compressed (none if `None`). When every attempt fails
/// the task calls `on_failure` with the reason (the source then ends the subscription with
/// DeliveryFailure).
pub(crate) fn spawn_sink(
    sub: &Subscription,
    limits: SinkLimits,
    policy: RetryPolicy,
    probe: Option<DeliveryProbe>,
    gzip_from: Option<usize>,
    guard: &DeliveryPolicy,
    on_failure: OnFailure,
) -> (SinkQueue, FarewellSender, Stop) {
    let (tx, mut rx) = SinkQueue::new(limits.capacity, limits.bytes, limits.gauges.clone());
    let (farewell_tx, farewell) = oneshot::channel::<Farewell>();
    let (stop, mut stopped) = oneshot::channel::<()>();
    let id = sub.id.clone();
    let address = sub.notify_to.address.clone();
    let mut connection = Connection::open(sub, policy, gzip_from, limits.capacity, guard);
    let alive = limits.gauges.task();
    let wait = limits.wait;
    tokio::spawn(async move {
        let _alive = alive;
        let ready = |events: &[Queued]| {
            if let Some(probe) = &probe {
                let now = crate::protocol::event::unix_ns();
                for event in events {
                    (probe.0)(&id, event.seq, event.published_ns, now);
                }
            }
        };
        let result = tokio::select! {
            // The subscription has ended: stop now, dropping the connection and the queue.
            _ = &mut stopped => return,
            result = run(&mut connection, &mut rx, wait, &ready) => result,
        };
        if let Err(why) = result {
            tracing::warn!(subscription = %id, %address, "delivery failed: {why}");
            drop(connection);
            drop(rx);
            on_failure(format!("notifications to {address} failed: {why}")).await;
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
    Answer(Result<Answered, DeliveryError>),
    Batch(usize),
    /// The batch held back since the last write may go now.
    Due,
}

/// Delivers what `rx` holds until it is closed and every notification is answered:
/// batches go out as they are taken while earlier ones wait for their answers (HTTP, up to
/// the connection's window), answers (or an overdue one's error) are taken as they come.
/// With a `wait`, a batch taken sooner than `wait` after the last write is held back
/// until then (answers are still taken meanwhile), gathering what comes, up to
/// [`MAX_BATCH`]; it goes at once when full or when the queue closes. An error means every
/// retry failed.
async fn run(
    connection: &mut Connection,
    rx: &mut SinkReceiver,
    wait: Duration,
    ready: &(dyn Fn(&[Queued]) + Send + Sync),
) -> Result<(), DeliveryError> {
    let mut batch = Vec::with_capacity(MAX_BATCH);
    let mut open = true;
    // When the held-back batch may go; made the first time one is held back (a sink's
    // task without a wait carries no timer).
    let mut due: Option<Pin<Box<Sleep>>> = None;
    let mut held_back = false;
    let mut last_write: Option<Instant> = None;
    loop {
        let unsettled = connection.unsettled();
        let room = MAX_BATCH - batch.len();
        let take = open && !connection.window_full() && room > 0;
        let step = tokio::select! {
            answer = connection.answer(), if unsettled => Step::Answer(answer),
            n = rx.recv_many(&mut batch, room), if take => Step::Batch(n),
            () = until(&mut due), if held_back => Step::Due,
            else => return Ok(()),
        };
        let write = match step {
            Step::Answer(answer) => {
                // What is held back still counts while a connection is replaced.
                let (back, back_bytes) = (batch.len(), held_back_bytes(&batch));
                let holding = |count, bytes| rx.holding(count + back, bytes + back_bytes);
                connection.on_answer(answer, ready, &holding).await?;
                false
            }
            Step::Batch(0) => {
                open = false;
                held_back
            }
            Step::Batch(_) if held_back => batch.len() >= MAX_BATCH,
            Step::Batch(_) => {
                let soonest = last_write.map(|at| at + wait);
                match soonest.filter(|at| batch.len() < MAX_BATCH && *at > Instant::now()) {
                    Some(at) => {
                        match &mut due {
                            Some(due) => due.as_mut().reset(at),
                            None => due = Some(Box::pin(tokio::time::sleep_until(at))),
                        }
                        held_back = true;
                        false
                    }
                    None => true,
                }
            }
            Step::Due => true,
        };
        if write {
            held_back = false;
            let delivered = connection.deliver(&mut batch, ready).await;
            batch.clear();
            if !wait.is_zero() {
                last_write = Some(Instant::now());
            }
            delivered?;
        }
        // What was answered or written no longer counts against the sink's bounds; what
        // is held back still does.
        let (count, bytes) = connection.held();
        rx.holding(count + batch.len(), bytes + held_back_bytes(&batch));
    }
}

/// Completes when `due` has passed; never without one.
async fn until(due: &mut Option<Pin<Box<Sleep>>>) {
    match due {
        Some(due) => due.as_mut().await,
        None => std::future::pending().await,
    }
}

/// The bytes of the notifications in `batch` (held back, or none).
fn held_back_bytes(batch: &[Queued]) -> u64 {
    batch.iter().map(|queued| queued.size()).sum()
}
