//! Admission: immediate refusal when full, priority order under saturation, waiters that
//! give up, and the window adapting.

use lather_pipeline::{Busy, Gate, LimitPolicy, Priority};
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[tokio::test]
async fn a_full_queue_refuses_at_once() {
    let gate = Gate::new(2, LimitPolicy::Fixed(1));
    let held = gate.enter(Priority::Normal).await.unwrap();
    let g1 = gate.clone();
    let w1 = tokio::spawn(async move { g1.enter(Priority::Normal).await.map(drop) });
    let g2 = gate.clone();
    let w2 = tokio::spawn(async move { g2.enter(Priority::Low).await.map(drop) });
    while gate.stats().queued < 2 {
        tokio::task::yield_now().await;
    }
    let refused = tokio::time::timeout(Duration::from_secs(5), gate.enter(Priority::High))
        .await
        .expect("a refusal must not wait");
    assert_eq!(
        refused.unwrap_err(),
        Busy {
            in_flight: 1,
            queued: 2
        }
    );
    assert_eq!(gate.stats().refused, 1);
    drop(held);
    w1.await.unwrap().unwrap();
    w2.await.unwrap().unwrap();
    let stats = gate.stats();
    assert_eq!((stats.in_flight, stats.queued), (0, 0));
}

#[tokio::test]
async fn waiters_are_admitted_highest_class_first_then_in_arrival_order() {
    let gate = Gate::new(100, LimitPolicy::Fixed(1));
    let held = gate.enter(Priority::Normal).await.unwrap();
    let order = Arc::new(Mutex::new(Vec::new()));
    let mut tasks = Vec::new();
    let arrivals = [
        ("low-1", Priority::Low),
        ("normal-1", Priority::Normal),
        ("high-1", Priority::High),
        ("low-2", Priority::Low),
        ("high-2", Priority::High),
        ("normal-2", Priority::Normal),
    ];
    for (i, (name, priority)) in arrivals.into_iter().enumerate() {
        let g = gate.clone();
        let order = order.clone();
        tasks.push(tokio::spawn(async move {
            let permit = g.enter(priority).await.unwrap();
            order.lock().unwrap().push(name);
            drop(permit);
        }));
        while gate.stats().queued < i + 1 {
            tokio::task::yield_now().await;
        }
    }
    drop(held);
    for t in tasks {
        t.await.unwrap();
    }
    assert_eq!(
        *order.lock().unwrap(),
        ["high-1", "high-2", "normal-1", "normal-2", "low-1", "low-2"]
    );
}

#[tokio::test]
async fn a_waiter_that_gives_up_loses_its_place_and_the_slot_goes_on() {
    let gate = Gate::new(10, LimitPolicy::Fixed(1));
    let held = gate.enter(Priority::Normal).await.unwrap();
    let g = gate.clone();
    let quitter = tokio::spawn(async move { g.enter(Priority::High).await.map(drop) });
    while gate.stats().queued < 1 {
        tokio::task::yield_now().await;
    }
    let g = gate.clone();
    let patient = tokio::spawn(async move { g.enter(Priority::Low).await.map(drop) });
    while gate.stats().queued < 2 {
        tokio::task::yield_now().await;
    }
    quitter.abort();
    let _ = quitter.await;
    drop(held);
    tokio::time::timeout(Duration::from_secs(5), patient)
        .await
        .expect("the slot was lost with the quitter")
        .unwrap()
        .unwrap();
    assert_eq!(gate.stats().in_flight, 0);
}

#[tokio::test(start_paused = true)]
async fn the_adaptive_window_grows_under_steady_load_and_shrinks_when_latency_rises() {
    let gate = Gate::new(
        1000,
        LimitPolicy::Adaptive {
            min: 2,
            max: 64,
            initial: 4,
        },
    );
    assert_eq!(gate.stats().limit, 4);
    // Keep the window full with messages that each take 10 ms (virtual time): it grows.
    let mut rounds = 0;
    while gate.stats().limit < 16 {
        let permits: Vec<_> = futures_join(gate.clone(), gate.stats().limit).await;
        tokio::time::sleep(Duration::from_millis(10)).await;
        drop(permits);
        rounds += 1;
        assert!(rounds < 1000, "stuck at {}", gate.stats().limit);
    }
    let grown = gate.stats().limit;
    // Then each message takes 50 ms, five times the baseline: it shrinks, down to the floor.
    let mut rounds = 0;
    while gate.stats().limit > 2 {
        let permits: Vec<_> = futures_join(gate.clone(), gate.stats().limit).await;
        tokio::time::sleep(Duration::from_millis(50)).await;
        drop(permits);
        rounds += 1;
        assert!(rounds < 1000, "{grown} → {}", gate.stats().limit);
    }
    assert_eq!(gate.stats().limit, 2);
    let stats = gate.stats();
    assert_eq!((stats.in_flight, stats.queued), (0, 0));
}

async fn futures_join(gate: Arc<Gate>, n: usize) -> Vec<lather_pipeline::Permit> {
    let mut permits = Vec::with_capacity(n);
    for _ in 0..n {
        permits.push(gate.enter(Priority::Normal).await.unwrap());
    }
    permits
}
