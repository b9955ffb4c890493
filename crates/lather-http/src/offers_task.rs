//! The server's offers kept up: once a second each adaptive offer gets its load sample
//! (lather's CPU share, the service's admission queue, its p99 over the second), and with
//! `[qos] broker` every offer is registered with the broker — at start, whenever a price
//! moves, and every `broker_refresh_s` (sooner if the broker grants a shorter lease) — and
//! removed from it when the server stops. Registration runs on a task of its own, so a
//! broker that is slow or away never delays a sample.

use crate::offer_broker::OfferSender;
use crate::service::Service;
use crate::state::State;
use lather_config::LoadMetric;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use tokio::time::Instant;

/// How long a stopping server waits for its offers to be removed from the broker.
pub(crate) const DEREGISTER_WAIT: Duration = Duration::from_secs(6);
/// The wait before a failed registration is tried again.
const RETRY: Duration = Duration::from_secs(5);

/// Runs until `stopping` turns true; returns at once when no service makes offers.
pub(crate) async fn run(state: Arc<State>, mut stopping: watch::Receiver<bool>) {
    let mut services = state.unique_services();
    services.retain(|s| s.offers.is_some());
    if services.is_empty() {
        return;
    }
    let (moved_tx, moved_rx) = watch::channel(0u64);
    let registrar = state.offer_broker.as_ref().map(|b| {
        tokio::spawn(register(
            services.clone(),
            b.sender.clone(),
            b.refresh,
            moved_rx,
            stopping.clone(),
        ))
    });
    let adapts = services
        .iter()
        .any(|s| s.offers.as_ref().is_some_and(|o| o.adapts()));
    if adapts {
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = tick.tick() => {}
                _ = stopping.changed() => break,
            }
            if sample(&state, &services) {
                moved_tx.send_modify(|n| *n += 1);
            }
        }
    }
    if let Some(registrar) = registrar {
        let _ = registrar.await;
    }
}

/// Feeds one second's samples to every adaptive offer; true when a price moved.
fn sample(state: &State, services: &[Arc<Service>]) -> bool {
    let cpu = f64::from(state.compression.policy.gauge().percent());
    let mut moved = false;
    for service in services {
        let Some(offers) = &service.offers else {
            continue;
        };
        let queued = service.gate.stats().queued as f64;
        let p99 = offers.latency().map_or(0.0, |l| l.take_p99_ms());
        moved |= offers.observe(|metric| match metric {
            LoadMetric::Cpu => cpu,
            LoadMetric::Queue => queued,
            LoadMetric::P99Ms => p99,
        });
    }
    moved
}

/// Registers the offers at start, when a price moves and before the lease runs out; on
/// stop, removes them.
async fn register(
    services: Vec<Arc<Service>>,
    sender: OfferSender,
    refresh: Duration,
    mut moved: watch::Receiver<u64>,
    mut stopping: watch::Receiver<bool>,
) {
    let current = || -> Vec<lather_qos::Offer> {
        services
            .iter()
            .filter_map(|s| s.offers.as_ref())
            .flat_map(|o| o.current())
            .collect()
    };
    let mut next = Instant::now();
    loop {
        tokio::select! {
            () = tokio::time::sleep_until(next) => {}
            changed = moved.changed() => if changed.is_err() { break },
            _ = stopping.changed() => break,
        }
        let all = current();
        match sender.register(&all, refresh.saturating_mul(3)).await {
            Ok(granted) => {
                tracing::debug!(
                    offers = all.len(),
                    ?granted,
                    "QoS broker: offers registered"
                );
                // Again before a third of the lease granted is left, at the latest.
                let again = refresh.min(granted / 3).max(Duration::from_secs(1));
                next = Instant::now() + again;
            }
            Err(e) => {
                tracing::warn!(error = %e, "QoS broker: the offers could not be registered");
                next = Instant::now() + RETRY;
            }
        }
    }
    let mut endpoints: Vec<String> = current().into_iter().map(|o| o.endpoint).collect();
    endpoints.sort();
    endpoints.dedup();
    for endpoint in endpoints {
        if let Err(e) = sender.deregister(&endpoint).await {
            tracing::debug!(error = %e, %endpoint, "QoS broker: offers not removed");
        }
    }
}
