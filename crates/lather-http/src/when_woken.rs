//! A future that shares a task with a busier one, polled only when it has been woken itself.
//!
//! A task polls everything it awaits each time any of it wakes. A connection's idle watch
//! and its drain signal wait beside the connection, which wakes its task two or three times
//! per request; polled each time, the watch's timer and the signal's channel cost more
//! than the check that they have not been woken.

use futures_util::task::AtomicWaker;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, Wake, Waker};

/// `F`, polled at its first poll and after that only when a wake-up it asked for came.
pub(crate) struct WhenWoken<F> {
    future: Pin<Box<F>>,
    signal: Arc<Signal>,
    /// `signal` as a waker, handed to `future` at each of its polls.
    waker: Waker,
}

/// Whether the inner future was woken since it was last polled, and the task to wake.
struct Signal {
    woken: AtomicBool,
    task: AtomicWaker,
}

impl Wake for Signal {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.woken.store(true, Ordering::Release);
        self.task.wake();
    }
}

impl<F: Future> WhenWoken<F> {
    /// Wraps `future` (boxed once, here).
    pub(crate) fn new(future: F) -> Self {
        let signal = Arc::new(Signal {
            woken: AtomicBool::new(true),
            task: AtomicWaker::new(),
        });
        WhenWoken {
            future: Box::pin(future),
            waker: Waker::from(signal.clone()),
            signal,
        }
    }
}

impl<F: Future> Future for WhenWoken<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = &mut *self;
        // Registered before the check: a wake-up between the two wakes this task again.
        this.signal.task.register(cx.waker());
        if !this.signal.woken.swap(false, Ordering::AcqRel) {
            return Poll::Pending;
        }
        this.future
            .as_mut()
            .poll(&mut Context::from_waker(&this.waker))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::time::Duration;

    /// A future that counts its polls and is ready at its `ready_at`th.
    struct Counted {
        polls: Arc<AtomicUsize>,
        ready_at: usize,
    }

    impl Future for Counted {
        type Output = usize;

        fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<usize> {
            let n = self.polls.fetch_add(1, Ordering::SeqCst) + 1;
            if n >= self.ready_at {
                return Poll::Ready(n);
            }
            // Asks to be polled again, as a future with more to do would.
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    }

    #[tokio::test]
    async fn polled_only_after_its_own_wake_ups() {
        let polls = Arc::new(AtomicUsize::new(0));
        let mut woken = WhenWoken::new(Counted {
            polls: polls.clone(),
            ready_at: 3,
        });
        // Polled from a task woken by something else: the first poll goes through, then
        // the inner future runs only as often as it woke itself.
        let noop = Waker::noop();
        let mut cx = Context::from_waker(noop);
        assert!(Pin::new(&mut woken).poll(&mut cx).is_pending());
        assert_eq!(polls.load(Ordering::SeqCst), 1);
        assert!(Pin::new(&mut woken).poll(&mut cx).is_pending());
        assert_eq!(polls.load(Ordering::SeqCst), 2);
        assert_eq!(Pin::new(&mut woken).poll(&mut cx), Poll::Ready(3));
    }

    /// A future that counts its polls and passes them to `inner`.
    struct PollCount<F> {
        polls: Arc<AtomicUsize>,
        inner: Pin<Box<F>>,
    }

    impl<F: Future> Future for PollCount<F> {
        type Output = F::Output;

        fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
            self.polls.fetch_add(1, Ordering::SeqCst);
            self.inner.as_mut().poll(cx)
        }
    }

    #[tokio::test]
    async fn not_polled_again_until_woken() {
        let polls = Arc::new(AtomicUsize::new(0));
        let sleep = async {
            tokio::time::sleep(Duration::from_millis(30)).await;
            "slept"
        };
        let mut woken = WhenWoken::new(PollCount {
            polls: polls.clone(),
            inner: Box::pin(sleep),
        });
        let noop = Waker::noop();
        let mut cx = Context::from_waker(noop);
        for _ in 0..10 {
            assert!(Pin::new(&mut woken).poll(&mut cx).is_pending());
        }
        // Polled once; nine polls found it not woken.
        assert_eq!(polls.load(Ordering::SeqCst), 1);
        // Awaited, it finishes when its timer wakes it.
        assert_eq!(woken.await, "slept");
    }

    #[tokio::test]
    async fn beside_a_busy_future_it_still_completes() {
        let woken = WhenWoken::new(tokio::time::sleep(Duration::from_millis(20)));
        let busy = async {
            loop {
                tokio::task::yield_now().await;
            }
        };
        tokio::select! {
            biased;
            () = busy => unreachable!("the busy future never ends"),
            () = woken => {}
        }
    }
}
