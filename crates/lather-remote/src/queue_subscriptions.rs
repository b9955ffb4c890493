//! A worker's request subscriptions, one per hosted handler, read as one stream: each
//! poll tries them in turn from the one after the last that gave a message, so a busy
//! handler does not starve the others, and a message costs one channel poll (no task
//! node allocated and released per message, as a general stream combinator does).

use crate::hosted::Hosted;
use futures_util::StreamExt;
use std::sync::Arc;
use std::task::{Context, Poll};

/// The subscriptions and the handler each one feeds.
pub(crate) struct QueueSubscriptions {
    subscribed: Vec<(Arc<Hosted>, async_nats::Subscriber)>,
    next: usize,
}

impl QueueSubscriptions {
    /// Reads `subscribed` together.
    pub(crate) fn new(subscribed: Vec<(Arc<Hosted>, async_nats::Subscriber)>) -> Self {
        QueueSubscriptions {
            subscribed,
            next: 0,
        }
    }

    /// Whether there is no subscription at all (every hosted handler is oneway).
    pub(crate) fn is_empty(&self) -> bool {
        self.subscribed.is_empty()
    }

    /// The next request and the handler it is for; `None` once every subscription ended.
    pub(crate) async fn next(&mut self) -> Option<(Arc<Hosted>, async_nats::Message)> {
        std::future::poll_fn(|cx| self.poll_next(cx)).await
    }

    fn poll_next(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Option<(Arc<Hosted>, async_nats::Message)>> {
        let count = self.subscribed.len();
        let mut ended = 0;
        for step in 0..count {
            let at = (self.next + step) % count;
            let (hosted, subscriber) = &mut self.subscribed[at];
            match subscriber.poll_next_unpin(cx) {
                Poll::Ready(Some(message)) => {
                    self.next = (at + 1) % count;
                    return Poll::Ready(Some((hosted.clone(), message)));
                }
                Poll::Ready(None) => ended += 1,
                Poll::Pending => {}
            }
        }
        if ended == count {
            Poll::Ready(None)
        } else {
            Poll::Pending
        }
    }

    /// The subscriptions, for unsubscribing.
    pub(crate) fn into_subscribers(self) -> impl Iterator<Item = async_nats::Subscriber> {
        self.subscribed
            .into_iter()
            .map(|(_, subscriber)| subscriber)
    }
}
