//! The gate is cancel-safe: a property test over its state machine. Random enters, polls,
//! cancellations (futures dropped while queued, and after being granted a slot but before
//! being polled again) and releases; after every step the gate's gauges must equal the real
//! permits and waiters, and a reference model says exactly who holds a slot.

use lather_pipeline::{Busy, Gate, LimitPolicy, Permit, Priority};
use proptest::prelude::*;
use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

type Entering = Pin<Box<dyn Future<Output = Result<Permit, Busy>>>>;

#[derive(Debug, Clone)]
enum Op {
    /// A message asks to enter in this class.
    Enter(Priority),
    /// The n-th waiting future (modulo their count) is polled.
    Poll(usize),
    /// The n-th waiting future is dropped: its client gave up.
    Cancel(usize),
    /// The n-th permit is dropped: its message finished.
    Release(usize),
}

fn op() -> impl Strategy<Value = Op> {
    let priority = prop_oneof![
        Just(Priority::High),
        Just(Priority::Normal),
        Just(Priority::Low)
    ];
    prop_oneof![
        3 => priority.prop_map(Op::Enter),
        2 => any::<usize>().prop_map(Op::Poll),
        2 => any::<usize>().prop_map(Op::Cancel),
        2 => any::<usize>().prop_map(Op::Release),
    ]
}

/// What the gate should hold: slots taken, the queues by class, who was granted a slot.
#[derive(Debug, Default)]
struct Model {
    in_flight: usize,
    queues: [VecDeque<u64>; 3],
    granted: Vec<u64>,
}

impl Model {
    fn queued(&self) -> usize {
        self.queues.iter().map(VecDeque::len).sum()
    }

    /// A slot is free again: hand free slots to waiters, highest class first.
    fn free(&mut self, limit: usize) {
        self.in_flight -= 1;
        while self.in_flight < limit {
            let Some(id) = self.queues.iter_mut().find_map(VecDeque::pop_front) else {
                break;
            };
            self.granted.push(id);
            self.in_flight += 1;
        }
    }
}

fn poll(future: &mut Entering) -> Poll<Result<Permit, Busy>> {
    future
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()))
}

/// Runs `ops` against a gate with a fixed limit, checking it against the model after every
/// step, then drops everything and checks the gate is empty.
fn run(limit: usize, capacity: usize, ops: Vec<Op>) -> Result<(), TestCaseError> {
    let gate = Gate::new(capacity, LimitPolicy::Fixed(limit));
    let mut model = Model::default();
    let mut waiting: Vec<(u64, Entering)> = Vec::new();
    let mut permits: Vec<Permit> = Vec::new();
    let mut next = 0u64;
    for op in ops {
        match op {
            Op::Enter(priority) => {
                let id = next;
                next += 1;
                let mut future: Entering = Box::pin(enter(&gate, priority));
                match poll(&mut future) {
                    Poll::Ready(Ok(permit)) => {
                        prop_assert!(model.queued() == 0 && model.in_flight < limit);
                        model.in_flight += 1;
                        permits.push(permit);
                    }
                    Poll::Ready(Err(busy)) => {
                        prop_assert_eq!(model.queued(), capacity);
                        prop_assert_eq!(busy.queued, capacity);
                        prop_assert_eq!(busy.in_flight, model.in_flight);
                    }
                    Poll::Pending => {
                        prop_assert!(model.queued() > 0 || model.in_flight >= limit);
                        model.queues[priority as usize].push_back(id);
                        waiting.push((id, future));
                    }
                }
            }
            Op::Poll(n) if !waiting.is_empty() => {
                let at = n % waiting.len();
                let id = waiting[at].0;
                match poll(&mut waiting[at].1) {
                    Poll::Ready(Ok(permit)) => {
                        let granted = model.granted.iter().position(|g| *g == id);
                        prop_assert!(granted.is_some(), "waiter {} entered ungranted", id);
                        model.granted.retain(|g| *g != id);
                        permits.push(permit);
                        drop(waiting.swap_remove(at));
                    }
                    Poll::Ready(Err(busy)) => {
                        prop_assert!(false, "a queued waiter was refused: {:?}", busy);
                    }
                    Poll::Pending => {
                        prop_assert!(!model.granted.contains(&id), "granted {} waits", id);
                    }
                }
            }
            Op::Cancel(n) if !waiting.is_empty() => {
                let (id, future) = waiting.swap_remove(n % waiting.len());
                drop(future);
                if model.granted.contains(&id) {
                    model.granted.retain(|g| *g != id);
                    model.free(limit);
                } else {
                    for q in &mut model.queues {
                        q.retain(|w| *w != id);
                    }
                }
            }
            Op::Release(n) if !permits.is_empty() => {
                drop(permits.swap_remove(n % permits.len()));
                model.free(limit);
            }
            _ => {}
        }
        check(&gate, &model, &permits, &waiting, limit, capacity)?;
    }
    drop(waiting);
    drop(permits);
    let stats = gate.stats();
    prop_assert_eq!((stats.in_flight, stats.queued), (0, 0));
    Ok(())
}

fn check(
    gate: &Gate,
    model: &Model,
    permits: &[Permit],
    waiting: &[(u64, Entering)],
    limit: usize,
    capacity: usize,
) -> Result<(), TestCaseError> {
    let stats = gate.stats();
    prop_assert_eq!(stats.in_flight, model.in_flight);
    prop_assert_eq!(stats.queued, model.queued());
    // Every slot is a permit or a grant not taken yet; every live future is granted or
    // queued.
    prop_assert_eq!(stats.in_flight, permits.len() + model.granted.len());
    prop_assert_eq!(
        stats.in_flight + stats.queued,
        permits.len() + waiting.len()
    );
    prop_assert!(stats.in_flight <= limit);
    prop_assert!(stats.queued <= capacity);
    // Nobody waits while a slot is free.
    prop_assert!(stats.queued == 0 || stats.in_flight == limit);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn every_slot_and_place_comes_back_whatever_is_cancelled(
        limit in 1usize..4,
        capacity in 0usize..6,
        ops in proptest::collection::vec(op(), 1..120),
    ) {
        run(limit, capacity, ops)?;
    }
}

/// The case of the report: a slot granted to a waiter whose client left before it was
/// polled again came back, and the next waiter gets it.
#[test]
fn a_granted_but_abandoned_slot_goes_to_the_next_waiter() {
    let gate = Gate::new(8, LimitPolicy::Fixed(1));
    let held = poll_now(&gate, Priority::Normal);
    let Poll::Ready(Ok(held)) = held else {
        panic!("the first enters at once")
    };
    let mut quitter: Entering = Box::pin(enter(&gate, Priority::High));
    let mut patient: Entering = Box::pin(enter(&gate, Priority::Normal));
    assert!(poll(&mut quitter).is_pending());
    assert!(poll(&mut patient).is_pending());
    drop(held);
    // The slot went to the quitter, who never polls again.
    assert_eq!((gate.stats().in_flight, gate.stats().queued), (1, 1));
    drop(quitter);
    assert_eq!((gate.stats().in_flight, gate.stats().queued), (1, 0));
    let Poll::Ready(Ok(permit)) = poll(&mut patient) else {
        panic!("the slot was lost with the quitter")
    };
    drop(permit);
    assert_eq!((gate.stats().in_flight, gate.stats().queued), (0, 0));
}

fn enter(
    gate: &Arc<Gate>,
    priority: Priority,
) -> impl Future<Output = Result<Permit, Busy>> + use<> {
    let gate = gate.clone();
    async move { gate.enter(priority).await }
}

fn poll_now(gate: &Arc<Gate>, priority: Priority) -> Poll<Result<Permit, Busy>> {
    let mut future: Entering = Box::pin(enter(gate, priority));
    poll(&mut future)
}
