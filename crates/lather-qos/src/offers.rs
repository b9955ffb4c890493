//! The offers one service makes, as they stand: configured, with adaptive prices moved by
//! the load samples fed to them, served as a document and registered with a broker.

use crate::adaptive::AdaptivePrice;
use crate::latency::LatencyWindow;
use crate::offer::{Offer, offers_document};
use lather_config::{LoadMetric, OfferConfig};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use tokio::sync::Notify;

/// A service's offers.
#[derive(Debug)]
pub struct ServiceOffers {
    entries: Mutex<Vec<Entry>>,
    version: AtomicU64,
    changed: Notify,
    latency: Option<LatencyWindow>,
}

#[derive(Debug)]
struct Entry {
    offer: Offer,
    adaptive: Option<AdaptivePrice>,
}

impl ServiceOffers {
    /// The offers `configs` make for the service `service` reached at `endpoint`.
    pub fn new(service: &str, endpoint: &str, configs: &[OfferConfig]) -> ServiceOffers {
        let entries: Vec<Entry> = configs
            .iter()
            .map(|c| {
                let rule = c.adaptive_rule();
                Entry {
                    offer: Offer {
                        service: service.to_owned(),
                        endpoint: endpoint.to_owned(),
                        name: c.name.get_ref().clone(),
                        response_time_ms: *c.response_time_ms.get_ref(),
                        throughput: *c.throughput.get_ref(),
                        price: *c.price.get_ref(),
                        compression: c.compression.as_ref().map(|p| *p.get_ref()),
                        class: c.class.as_ref().map(|p| p.get_ref().clone()),
                        adapts_to: rule.map(|r| r.metric.as_str().to_owned()),
                    },
                    adaptive: rule.map(AdaptivePrice::new),
                }
            })
            .collect();
        let follows_p99 = entries.iter().any(|e| {
            e.adaptive
                .as_ref()
                .is_some_and(|a| a.rule().metric == LoadMetric::P99Ms)
        });
        ServiceOffers {
            entries: Mutex::new(entries),
            version: AtomicU64::new(0),
            changed: Notify::new(),
            latency: follows_p99.then(LatencyWindow::default),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Entry>> {
        // Each critical section replaces whole values: a poisoned lock holds no half-update.
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The offers as they stand.
    pub fn current(&self) -> Vec<Offer> {
        self.lock().iter().map(|e| e.offer.clone()).collect()
    }

    /// The offers as a `q:Offers` document.
    pub fn document(&self) -> String {
        offers_document(&self.current())
    }

    /// Whether any offer adapts (the service needs load samples).
    pub fn adapts(&self) -> bool {
        self.lock().iter().any(|e| e.adaptive.is_some())
    }

    /// The response-time counters, when an offer follows p99: each answer is recorded.
    pub fn latency(&self) -> Option<&LatencyWindow> {
        self.latency.as_ref()
    }

    /// Feeds one second's load sample of each kind to the adaptive offers following it;
    /// `sample` gives the figure for a metric. True when a price moved (the change is also
    /// signalled to [`ServiceOffers::changed`] waiters).
    pub fn observe(&self, sample: impl Fn(LoadMetric) -> f64) -> bool {
        let mut moved = false;
        for entry in self.lock().iter_mut() {
            if let Some(adaptive) = &mut entry.adaptive
                && let Some(price) = adaptive.observe(sample(adaptive.rule().metric))
            {
                tracing::info!(
                    service = %entry.offer.service,
                    offer = %entry.offer.name,
                    price,
                    "adaptive offer price moved"
                );
                entry.offer.price = price;
                moved = true;
            }
        }
        if moved {
            self.version.fetch_add(1, Ordering::Relaxed);
            self.changed.notify_waiters();
        }
        moved
    }

    /// How many times a price has moved.
    pub fn version(&self) -> u64 {
        self.version.load(Ordering::Relaxed)
    }

    /// Woken whenever a price moves.
    pub fn changed(&self) -> &Notify {
        &self.changed
    }
}
