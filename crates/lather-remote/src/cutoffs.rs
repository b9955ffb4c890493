//! The seed's two cut-offs for transfer batching, shared by the gatherers of remote calls
//! and of oneway hand-offs: a batch is sent when it holds `max_items`, or `wait` after its
//! first item, whichever comes first — and before its bytes pass `budget`.

use std::time::Duration;
use tokio::sync::mpsc;

/// When a batch being gathered is cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Cutoffs {
    /// The size cut-off (`[nats] batch_max_items`).
    pub(crate) max_items: usize,
    /// The time cut-off (`[nats] batch_wait_ms`).
    pub(crate) wait: Duration,
    /// The most bytes a batch carries (half the NATS server's largest message).
    pub(crate) budget: usize,
}

impl Cutoffs {
    /// Gathers the batch that starts with `first` from `queue`, measuring each item with
    /// `size`. An item that would pass the budget is left in `carried`, to start the next
    /// batch.
    pub(crate) async fn fill<T>(
        &self,
        first: T,
        queue: &mut mpsc::UnboundedReceiver<T>,
        carried: &mut Option<T>,
        size: impl Fn(&T) -> usize,
    ) -> Vec<T> {
        let mut bytes = size(&first);
        let mut batch = vec![first];
        let deadline = tokio::time::Instant::now() + self.wait;
        while batch.len() < self.max_items && bytes < self.budget {
            match tokio::time::timeout_at(deadline, queue.recv()).await {
                Ok(Some(more)) => {
                    let more_bytes = size(&more);
                    if bytes + more_bytes > self.budget {
                        *carried = Some(more);
                        break;
                    }
                    bytes += more_bytes;
                    batch.push(more);
                }
                _ => break,
            }
        }
        batch
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cut(max_items: usize, wait_ms: u64, budget: usize) -> Cutoffs {
        Cutoffs {
            max_items,
            wait: Duration::from_millis(wait_ms),
            budget,
        }
    }

    #[tokio::test]
    async fn a_batch_is_cut_by_count_by_bytes_or_by_time() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        for n in [1usize, 2, 3, 4, 5] {
            tx.send(n).unwrap();
        }
        let mut carried = None;
        // By count: three of the five.
        let batch = cut(3, 1000, 100)
            .fill(0, &mut rx, &mut carried, |_| 1)
            .await;
        assert_eq!(batch, [0, 1, 2]);
        // By bytes: 0 + 3 + 4 fit in 8, 5 does not and starts the next batch.
        let batch = cut(10, 1000, 8)
            .fill(0, &mut rx, &mut carried, |n| *n)
            .await;
        assert_eq!((batch, carried.take()), (vec![0, 3, 4], Some(5)));
        // By time: nothing more comes.
        let started = std::time::Instant::now();
        let batch = cut(10, 20, 100).fill(9, &mut rx, &mut carried, |_| 1).await;
        assert_eq!(batch, [9]);
        assert!(started.elapsed() >= Duration::from_millis(20));
    }
}
