//! The server's offers kept up: once a second each adaptive offer gets its load sample
//! (lather's CPU share, the service's admission queue, its p99 over the second), and with
//! `[qos] broker` every offer is registered with the broker — at start, whenever a price
//! moves, and every `broker_refresh_s` — and removed from it when the server stops.

use crate::offer_broker::OfferSender;
use crate::service::Service;
use crate::state::State;
use lather_config::LoadMetric;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// How long a stopping server waits for its offers to be removed from the broker.
pub(crate) const DEREGISTER_WAIT: Duration = Duration::from_secs(6);
/// The wait before a failed registration is tried again.
const RETRY: Duration = Duration::from_secs(5);

/// Runs until `stopping` turns true; returns at once when no service makes offers.
pub(crate) async fn run(state: Arc<State>, mut stopping: watch::Receiver<bool>) {
    let mut services: Vec<Arc<Service>> = Vec::new();
    for service in state.services.values() {
        if service.offers.is_some() && !services.iter().any(|s| Arc::ptr_eq(s, service)) {
            services.push(service.clone());
        }
    }
    if services.is_empty() {
        return;
    }
    let adapts = services
        .iter()
        .any(|s| s.offers.as_ref().is_some_and(|o| o.adapts()));
    let broker = state
        .offer_broker
        .as_ref()
        .and_then(|b| OfferSender::new(&b.target).map(|sender| (sender, b.refresh)));
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut next_registration = Instant::now();
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = stopping.changed() => break,
        }
        let mut moved = false;
        if adapts {
            let cpu = f64::from(state.compression.policy.gauge().percent());
            for service in &services {
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
        }
        if let Some((client, refresh)) = &broker
            && (moved || Instant::now() >= next_registration)
        {
            let all: Vec<_> = services
                .iter()
                .filter_map(|s| s.offers.as_ref())
                .flat_map(|o| o.current())
                .collect();
            match client.register(&all, *refresh * 3).await {
                Ok(_) => {
                    tracing::debug!(offers = all.len(), "QoS broker: offers registered");
                    next_registration = Instant::now() + *refresh;
                }
                Err(e) => {
                    tracing::warn!(error = %e, "QoS broker: the offers could not be registered");
                    next_registration = Instant::now() + RETRY;
                }
            }
        }
    }
    if let Some((client, _)) = &broker {
        let mut endpoints: Vec<String> = services
            .iter()
            .filter_map(|s| s.offers.as_ref())
            .flat_map(|o| o.current())
            .map(|o| o.endpoint)
            .collect();
        endpoints.sort();
        endpoints.dedup();
        for endpoint in endpoints {
            if let Err(e) = client.deregister(&endpoint).await {
                tracing::debug!(error = %e, %endpoint, "QoS broker: offers not removed");
            }
        }
    }
}
