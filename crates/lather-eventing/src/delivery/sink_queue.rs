//! A sink's queue: notifications wait here for the sink's delivery task, bounded by count
//! (`queue_capacity`, those waiting) and by bytes (`sink_queue_bytes`, those waiting and
//! those the task has taken and not let go); beyond either a notification is dropped for
//! that sink alone (logged and counted). Every queued notification shares its event (an
//! `Arc`) with the other sinks' queues.
//!
//! One lock guards the waiting events and the sink's counts, so queueing a notification
//! costs the lock and the event's reference count. The delivery task says what it still
//! holds after each step ([`SinkReceiver::holding`]) instead of each notification giving
//! its bytes back on its own.

use crate::delivery::gauges::Gauges;
use crate::delivery::stamped::Stamped;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};

/// One notification in a sink's queue or delivery: the shared event.
#[derive(Debug)]
pub(crate) struct Queued {
    event: Arc<Stamped>,
}

impl Queued {
    /// The shared event.
    pub(crate) fn event(&self) -> &Arc<Stamped> {
        &self.event
    }
}

impl std::ops::Deref for Queued {
    type Target = Stamped;

    fn deref(&self) -> &Stamped {
        &self.event
    }
}

/// What the queue's lock guards.
#[derive(Debug)]
struct State {
    waiting: VecDeque<Arc<Stamped>>,
    /// Bytes of `waiting`.
    waiting_bytes: u64,
    /// Notifications the delivery task took and holds (as it last said), and their bytes.
    taken: usize,
    taken_bytes: u64,
    /// The delivery task, waiting for a notification.
    waker: Option<Waker>,
    /// Live [`SinkQueue`]s: with none left the queue is closed.
    senders: usize,
    /// Whether the [`SinkReceiver`] lives; without it nothing is queued.
    receiving: bool,
}

#[derive(Debug)]
struct Shared {
    state: Mutex<State>,
    /// Most notifications waiting.
    capacity: usize,
    /// Most bytes the sink holds (`sink_queue_bytes`).
    limit: u64,
    gauges: Arc<Gauges>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The sending side of a sink's queue (cloned: the queue closes when the last is dropped).
#[derive(Debug)]
pub(crate) struct SinkQueue {
    shared: Arc<Shared>,
}

/// The receiving side, for the delivery task.
#[derive(Debug)]
pub(crate) struct SinkReceiver {
    shared: Arc<Shared>,
}

impl SinkQueue {
    /// A queue of at most `capacity` waiting notifications and `limit` bytes held; drops
    /// are counted in `gauges`.
    pub(crate) fn new(
        capacity: usize,
        limit: u64,
        gauges: Arc<Gauges>,
    ) -> (SinkQueue, SinkReceiver) {
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                waiting: VecDeque::new(),
                waiting_bytes: 0,
                taken: 0,
                taken_bytes: 0,
                waker: None,
                senders: 1,
                receiving: true,
            }),
            capacity: capacity.max(1),
            limit,
            gauges,
        });
        let receiver = SinkReceiver {
            shared: Arc::clone(&shared),
        };
        (SinkQueue { shared }, receiver)
    }

    /// Queues `event` for subscription `id`'s sink; a full queue (by count or bytes) drops
    /// it with a warning, and so does a queue whose delivery task has ended. An empty sink
    /// takes one event of any size. Whether it was queued.
    pub(crate) fn offer(&self, id: &str, event: &Arc<Stamped>) -> bool {
        let size = event.size();
        let mut state = self.shared.lock();
        let held = state.waiting_bytes + state.taken_bytes;
        if held.saturating_add(size) > self.shared.limit && held > 0 {
            drop(state);
            self.dropped(id, "its bytes");
            return false;
        }
        if state.waiting.len() >= self.shared.capacity || !state.receiving {
            drop(state);
            self.dropped(id, "its count");
            return false;
        }
        state.waiting.push_back(Arc::clone(event));
        state.waiting_bytes += size;
        let waker = state.waker.take();
        drop(state);
        if let Some(waker) = waker {
            waker.wake();
        }
        true
    }

    /// Notifications the sink holds now: queued, or taken by its delivery task and not
    /// yet delivered.
    pub(crate) fn held(&self) -> usize {
        let state = self.shared.lock();
        state.waiting.len() + state.taken
    }

    /// Bytes the sink holds now: its queue and the notifications being delivered.
    pub(crate) fn bytes(&self) -> u64 {
        let state = self.shared.lock();
        state.waiting_bytes + state.taken_bytes
    }

    fn dropped(&self, id: &str, bound: &str) {
        self.shared
            .gauges
            .dropped
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        tracing::warn!(subscription = %id, "sink queue full ({bound}): event dropped");
    }
}

impl Clone for SinkQueue {
    fn clone(&self) -> SinkQueue {
        self.shared.lock().senders += 1;
        SinkQueue {
            shared: Arc::clone(&self.shared),
        }
    }
}

impl Drop for SinkQueue {
    fn drop(&mut self) {
        let mut state = self.shared.lock();
        state.senders -= 1;
        let waker = (state.senders == 0).then(|| state.waker.take()).flatten();
        drop(state);
        if let Some(waker) = waker {
            waker.wake();
        }
    }
}

impl SinkReceiver {
    /// Takes up to `limit` waiting notifications into `into` (in order), counting them as
    /// held by the delivery task; waits while none wait. 0 once the queue is closed (every
    /// [`SinkQueue`] dropped) and empty. Cancel-safe.
    pub(crate) async fn recv_many(&mut self, into: &mut Vec<Queued>, limit: usize) -> usize {
        std::future::poll_fn(|cx| self.poll_recv_many(cx, into, limit)).await
    }

    fn poll_recv_many(
        &self,
        cx: &mut Context<'_>,
        into: &mut Vec<Queued>,
        limit: usize,
    ) -> Poll<usize> {
        let mut state = self.shared.lock();
        if !state.waiting.is_empty() {
            let n = state.waiting.len().min(limit.max(1));
            let mut bytes = 0;
            for event in state.waiting.drain(..n) {
                bytes += event.size();
                into.push(Queued { event });
            }
            state.waiting_bytes -= bytes;
            state.taken += n;
            state.taken_bytes += bytes;
            return Poll::Ready(n);
        }
        if state.senders == 0 {
            return Poll::Ready(0);
        }
        if !state
            .waker
            .as_ref()
            .is_some_and(|waker| waker.will_wake(cx.waker()))
        {
            state.waker = Some(cx.waker().clone());
        }
        Poll::Pending
    }

    /// The delivery task holds `count` notifications of `bytes` bytes now (taken and not
    /// yet let go): what it let go no longer counts against the sink's bounds.
    pub(crate) fn holding(&self, count: usize, bytes: u64) {
        let mut state = self.shared.lock();
        state.taken = count;
        state.taken_bytes = bytes;
    }
}

impl Drop for SinkReceiver {
    fn drop(&mut self) {
        let mut state = self.shared.lock();
        state.receiving = false;
        let waiting = std::mem::take(&mut state.waiting);
        state.waiting_bytes = 0;
        state.taken = 0;
        state.taken_bytes = 0;
        drop(state);
        // The events are let go outside the lock.
        drop(waiting);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::delivery::stamped::Stamped;

    fn event(bytes: usize) -> Arc<Stamped> {
        Stamped::new(
            crate::Event {
                payload: bytes::Bytes::from(vec![b'x'; bytes]),
                action: None,
                topics: Vec::new(),
                headers: Vec::new(),
            },
            String::new(),
            None,
        )
    }

    #[tokio::test]
    async fn bounds_count_what_waits_and_bytes_what_the_sink_holds() {
        let gauges = Arc::new(Gauges::default());
        let (queue, mut rx) = SinkQueue::new(2, 100, gauges.clone());
        assert!(queue.offer("s", &event(60)));
        assert!(!queue.offer("s", &event(60)), "beyond the bytes");
        assert!(queue.offer("s", &event(40)));
        assert!(!queue.offer("s", &event(0)), "beyond the count");
        assert_eq!((queue.held(), queue.bytes()), (2, 100));
        let mut taken = Vec::new();
        assert_eq!(rx.recv_many(&mut taken, 64).await, 2);
        // Taken, still held: the count has room, the bytes have not.
        assert_eq!((queue.held(), queue.bytes()), (2, 100));
        assert!(!queue.offer("s", &event(10)));
        // The task let the first go.
        rx.holding(1, 40);
        assert!(queue.offer("s", &event(10)));
        assert_eq!((queue.held(), queue.bytes()), (2, 50));
        rx.holding(0, 0);
        // An empty sink takes one event of any size.
        let (queue, _rx) = SinkQueue::new(2, 100, gauges.clone());
        assert!(queue.offer("s", &event(500)));
        assert!(!queue.offer("s", &event(1)));
        assert_eq!(gauges.dropped.load(std::sync::atomic::Ordering::Relaxed), 4);
    }

    #[tokio::test]
    async fn the_queue_closes_with_its_last_sender_and_takes_nothing_without_a_receiver() {
        let gauges = Arc::new(Gauges::default());
        let (queue, mut rx) = SinkQueue::new(8, 1 << 20, gauges.clone());
        let other = queue.clone();
        assert!(queue.offer("s", &event(1)));
        let waiting = tokio::spawn(async move {
            let mut taken = Vec::new();
            let mut counts = Vec::new();
            loop {
                let n = rx.recv_many(&mut taken, 1).await;
                counts.push(n);
                if n == 0 {
                    return counts;
                }
            }
        });
        drop(queue);
        tokio::task::yield_now().await;
        assert!(other.offer("s", &event(1)));
        drop(other);
        let counts = tokio::time::timeout(std::time::Duration::from_secs(5), waiting)
            .await
            .expect("the receiver sees the end")
            .unwrap();
        assert_eq!(counts, [1, 1, 0]);

        let (queue, rx) = SinkQueue::new(8, 1 << 20, gauges);
        assert!(queue.offer("s", &event(1)));
        drop(rx);
        assert_eq!((queue.held(), queue.bytes()), (0, 0));
        assert!(!queue.offer("s", &event(1)), "no delivery task takes it");
    }
}
