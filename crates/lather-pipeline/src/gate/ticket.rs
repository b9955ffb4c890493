//! A place in an admission queue, and the guard that gives it back.
//!
//! A waiting message holds a [`Ticket`]. The gate grants it a slot by sending the in-flight
//! count through the ticket's channel (under the gate's lock, counting the slot as taken at
//! once). The waiting future may be dropped at any point — before the grant, or after it but
//! before it was polled again to turn the grant into a [`Permit`](super::Permit). The
//! ticket's `Drop` settles both cases under the same lock: a granted slot is freed (and
//! handed on), a place still queued is taken out of its queue. No path leaks a slot or a
//! queued count.

use super::{Busy, Gate, Permit, Priority};
use std::sync::Arc;
use tokio::sync::oneshot;

/// One waiter in a class's queue: its id (to find it when it gives up) and where its grant
/// goes.
#[derive(Debug)]
pub(super) struct Waiter {
    pub(super) id: u64,
    pub(super) grant: oneshot::Sender<usize>,
}

/// A waiting message's place in the queue; dropping it unsettled gives the place (or the
/// slot already granted) back.
#[derive(Debug)]
pub(super) struct Ticket {
    gate: Arc<Gate>,
    priority: Priority,
    id: u64,
    receiver: oneshot::Receiver<usize>,
    /// The grant became a permit (or the wait ended otherwise): nothing to give back.
    settled: bool,
}

impl Ticket {
    /// A ticket for waiter `id` of class `priority`, whose grant arrives on `receiver`.
    pub(super) fn new(
        gate: Arc<Gate>,
        priority: Priority,
        id: u64,
        receiver: oneshot::Receiver<usize>,
    ) -> Self {
        Ticket {
            gate,
            priority,
            id,
            receiver,
            settled: false,
        }
    }

    /// Waits for the grant and turns it into a permit, with no await point in between.
    pub(super) async fn wait(mut self) -> Result<Permit, Busy> {
        let granted = (&mut self.receiver).await;
        self.settled = true;
        match granted {
            Ok(in_flight) => Ok(self.gate.permit(in_flight)),
            // The sender is only dropped by `Ticket::drop` itself (and with the gate): not
            // reachable while this ticket waits, but never a panic.
            Err(_) => {
                let stats = self.gate.stats();
                Err(Busy {
                    in_flight: stats.in_flight,
                    queued: stats.queued,
                })
            }
        }
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        if self.settled {
            return;
        }
        let mut inner = self.gate.lock();
        // Grants are sent under this lock, so after `close` nothing more can arrive and
        // `try_recv` tells for certain whether a slot was granted.
        self.receiver.close();
        if self.receiver.try_recv().is_ok() {
            // Granted but never turned into a permit: the slot goes on to the next waiter.
            self.gate.free_slot(&mut inner);
        } else {
            let queue = &mut inner.waiting[self.priority as usize];
            if let Some(at) = queue.iter().position(|w| w.id == self.id) {
                queue.remove(at);
                inner.queued -= 1;
            }
        }
    }
}
