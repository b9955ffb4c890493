//! Admission: a bounded queue with priority classes in front of an in-flight window.
//!
//! A message asks the [`Gate`] to enter. If fewer than the limit are in flight and nobody
//! waits, it enters at once. Otherwise it waits in its priority class's queue, if the queue
//! has room; if not, it is refused **at once** with [`Busy`] (the host answers 503 with
//! `Retry-After`). Load beyond capacity waits in a bounded queue or is refused — it never
//! piles up. When a message finishes, its [`Permit`] hands the slot to the first waiter of
//! the highest class, and its latency teaches the adaptive limit.
//!
//! The gate is cancel-safe: a waiting future dropped at any point (still queued, or granted
//! a slot it never took) gives its place or its slot back (see `ticket`), so the gauges of
//! [`Gate::stats`] always count real permits and real waiters.

mod limit;
mod ticket;
mod window;

pub use limit::LimitPolicy;

use limit::Limit;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use ticket::{Ticket, Waiter};
use tokio::sync::oneshot;
use tokio::time::Instant;

/// Priority classes, highest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub enum Priority {
    /// Served before everything else.
    High,
    /// The default class.
    #[default]
    Normal,
    /// Served when nothing else waits.
    Low,
}

impl Priority {
    const ALL: [Priority; 3] = [Priority::High, Priority::Normal, Priority::Low];

    /// The class named `name` (`high`, `normal`, `low`, any case).
    pub fn parse(name: &str) -> Option<Priority> {
        Priority::ALL
            .into_iter()
            .find(|p| p.name().eq_ignore_ascii_case(name.trim()))
    }

    /// The class's name.
    pub fn name(self) -> &'static str {
        match self {
            Priority::High => "high",
            Priority::Normal => "normal",
            Priority::Low => "low",
        }
    }
}

/// The queue was full: the message was refused without waiting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Busy {
    /// Messages in flight at the time.
    pub in_flight: usize,
    /// Messages waiting at the time.
    pub queued: usize,
}

/// What the gate holds now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GateStats {
    /// Messages in flight.
    pub in_flight: usize,
    /// The in-flight limit now.
    pub limit: usize,
    /// Messages waiting, all classes.
    pub queued: usize,
    /// Messages refused since start.
    pub refused: u64,
}

/// The admission gate of one service (or server).
#[derive(Debug)]
pub struct Gate {
    capacity: usize,
    inner: Mutex<Inner>,
}

#[derive(Debug)]
struct Inner {
    limit: Limit,
    in_flight: usize,
    waiting: [VecDeque<Waiter>; 3],
    queued: usize,
    refused: u64,
    /// The id the next waiter gets.
    next_id: u64,
}

impl Gate {
    /// A gate whose queues hold at most `capacity` waiting messages in all, with an
    /// in-flight limit set by `policy`.
    pub fn new(capacity: usize, policy: LimitPolicy) -> Arc<Gate> {
        Arc::new(Gate {
            capacity,
            inner: Mutex::new(Inner {
                limit: Limit::new(policy),
                in_flight: 0,
                waiting: Default::default(),
                queued: 0,
                refused: 0,
                next_id: 0,
            }),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding this lock cannot leave the counters half-updated (every
        // critical section is a few integer updates), so a poisoned lock is still usable.
        self.inner
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Enters the gate: at once, after waiting in `priority`'s queue, or — when the queue is
    /// full — not at all ([`Busy`], returned without waiting). Dropping the returned future
    /// at any point gives up the place in the queue, or the slot if one was granted already.
    pub async fn enter(self: &Arc<Self>, priority: Priority) -> Result<Permit, Busy> {
        let ticket = {
            let mut inner = self.lock();
            let nobody_waits = inner.queued == 0;
            if nobody_waits && inner.in_flight < inner.limit.current() {
                inner.in_flight += 1;
                let in_flight = inner.in_flight;
                return Ok(self.permit(in_flight));
            }
            if inner.queued >= self.capacity {
                inner.refused += 1;
                return Err(Busy {
                    in_flight: inner.in_flight,
                    queued: inner.queued,
                });
            }
            let (grant, receiver) = oneshot::channel();
            let id = inner.next_id;
            inner.next_id = inner.next_id.wrapping_add(1);
            inner.waiting[priority as usize].push_back(Waiter { id, grant });
            inner.queued += 1;
            Ticket::new(self.clone(), priority, id, receiver)
        };
        ticket.wait().await
    }

    fn permit(self: &Arc<Self>, in_flight: usize) -> Permit {
        Permit {
            gate: self.clone(),
            admitted: Instant::now(),
            in_flight,
        }
    }

    /// What the gate holds now.
    pub fn stats(&self) -> GateStats {
        let inner = self.lock();
        GateStats {
            in_flight: inner.in_flight,
            limit: inner.limit.current(),
            queued: inner.queued,
            refused: inner.refused,
        }
    }

    /// Frees a permit's slot, learns from its latency (admission to answer), and hands
    /// free slots on.
    fn release(&self, permit: &Permit) {
        let mut inner = self.lock();
        inner
            .limit
            .observe(permit.admitted.elapsed(), permit.in_flight);
        self.free_slot(&mut inner);
    }

    /// Frees one slot and hands free slots to waiters, highest class first.
    fn free_slot(&self, inner: &mut Inner) {
        inner.in_flight = inner.in_flight.saturating_sub(1);
        while inner.in_flight < inner.limit.current() && inner.queued > 0 {
            let Some(class) = inner.waiting.iter().position(|q| !q.is_empty()) else {
                break;
            };
            let Some(waiter) = inner.waiting[class].pop_front() else {
                break;
            };
            inner.queued -= 1;
            let in_flight = inner.in_flight + 1;
            // A waiter that gave up has left its queue already (its ticket's drop), so the
            // send only fails if the waiter vanished some other way; then the slot stays free.
            if waiter.grant.send(in_flight).is_ok() {
                inner.in_flight = in_flight;
            }
        }
    }
}

/// A slot in flight; dropping it frees the slot.
#[derive(Debug)]
pub struct Permit {
    gate: Arc<Gate>,
    admitted: Instant,
    in_flight: usize,
}

impl Drop for Permit {
    fn drop(&mut self) {
        self.gate.release(self);
    }
}
