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
use std::sync::atomic::{AtomicUsize, Ordering};
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
    /// Whether the [`SinkReceiver`] lives; without it nothing is queued.
    receiving: bool,
}

#[derive(Debug)]
struct Shared {
    state: Mutex<State>,
    /// Live [`SinkQueue`]s: with none left the queue is closed. Outside the lock, so that
    /// a clone for one publish takes none; the last one takes it to wake the receiver.
    senders: AtomicUsize,
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
                receiving: true,
            }),
            senders: AtomicUsize::new(1),
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

    /// The notifications the sink holds now (waiting, or taken by its delivery task and
    /// not yet let go) and their bytes, read at one moment.
    pub(crate) fn held_and_bytes(&self) -> (usize, u64) {
        let state = self.shared.lock();
        (
            state.waiting.len() + state.taken,
            state.waiting_bytes + state.taken_bytes,
        )
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
        self.shared.senders.fetch_add(1, Ordering::Relaxed);
        SinkQueue {
            shared: Arc::clone(&self.shared),
        }
    }
}

impl Drop for SinkQueue {
    fn drop(&mut self) {
        if self.shared.senders.fetch_sub(1, Ordering::AcqRel) != 1 {
            return;
        }
        // The last one: the receiver, if waiting, learns that the queue is closed. (It
        // reads the count under the lock, so it either sees it at 0 or has left its
        // waker here first.)
        let waker = self.shared.lock().waker.take();
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
        if self.shared.senders.load(Ordering::Acquire) == 0 {
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
        let waker = state.waker.take();
        state.waiting_bytes = 0;
        state.taken = 0;
        state.taken_bytes = 0;
        drop(state);
        // The events and the task's waker are let go outside the lock.
        drop(waiting);
        drop(waker);
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
        // An event's size is its payload's and its stamp's: the bounds are set from them.
        let (first, second, third) = (event(60), event(60), event(40));
        let bound = first.size() + third.size();
        let (queue, mut rx) = SinkQueue::new(2, bound, gauges.clone());
        assert!(queue.offer("s", &first));
        assert!(!queue.offer("s", &second), "beyond the bytes");
        assert!(queue.offer("s", &third));
        assert!(!queue.offer("s", &event(0)), "beyond the count");
        assert_eq!(queue.held_and_bytes(), (2, bound));
        let mut taken = Vec::new();
        assert_eq!(rx.recv_many(&mut taken, 64).await, 2);
        // Taken, still held: the count has room, the bytes have not.
        assert_eq!(queue.held_and_bytes(), (2, bound));
        let small = event(10);
        assert!(!queue.offer("s", &small));
        // The task let the first go.
        rx.holding(1, third.size());
        assert!(queue.offer("s", &small));
        assert_eq!(queue.held_and_bytes(), (2, third.size() + small.size()));
        rx.holding(0, 0);
        // An empty sink takes one event of any size.
        let (queue, _rx) = SinkQueue::new(2, bound, gauges.clone());
        assert!(queue.offer("s", &event(500)));
        assert!(!queue.offer("s", &event(1)));
        assert_eq!(gauges.dropped.load(std::sync::atomic::Ordering::Relaxed), 4);
    }

    /// A waker that counts its wakes.
    struct Counting(std::sync::atomic::AtomicUsize);

    impl std::task::Wake for Counting {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn a_waiting_receiver_is_woken_by_an_offer_and_by_the_close() {
        let (queue, rx) = SinkQueue::new(8, 1 << 20, Arc::new(Gauges::default()));
        let counting = Arc::new(Counting(AtomicUsize::new(0)));
        let waker = Waker::from(counting.clone());
        let mut cx = Context::from_waker(&waker);
        let mut taken = Vec::new();
        assert_eq!(rx.poll_recv_many(&mut cx, &mut taken, 8), Poll::Pending);
        assert!(queue.offer("s", &event(1)));
        assert_eq!(counting.0.load(Ordering::SeqCst), 1, "woken by the offer");
        assert_eq!(rx.poll_recv_many(&mut cx, &mut taken, 8), Poll::Ready(1));
        // A poll with another task's waker replaces the one kept.
        let other = Arc::new(Counting(AtomicUsize::new(0)));
        let other_waker = Waker::from(other.clone());
        let mut other_cx = Context::from_waker(&other_waker);
        assert_eq!(rx.poll_recv_many(&mut cx, &mut taken, 8), Poll::Pending);
        assert_eq!(
            rx.poll_recv_many(&mut other_cx, &mut taken, 8),
            Poll::Pending
        );
        let clone = queue.clone();
        drop(queue);
        assert_eq!(other.0.load(Ordering::SeqCst), 0, "one sender is left");
        drop(clone);
        assert_eq!(other.0.load(Ordering::SeqCst), 1, "woken by the close");
        assert_eq!(counting.0.load(Ordering::SeqCst), 1);
        assert_eq!(
            rx.poll_recv_many(&mut other_cx, &mut taken, 8),
            Poll::Ready(0)
        );
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
        assert_eq!(queue.held_and_bytes(), (0, 0));
        assert!(!queue.offer("s", &event(1)), "no delivery task takes it");
    }
}
