//! Per-service, per-phase histograms updated without a lock, read at scrape time.

use super::{Phase, Timeline};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;
use std::sync::atomic::{AtomicU64, Ordering};

/// Upper bounds of the buckets: 1 µs doubling to about 1 s (21 buckets), then +Inf.
const BOUNDS: usize = 21;

fn bound_seconds(i: usize) -> f64 {
    1e-6 * f64::from(1u32 << i)
}

/// One phase's counts: per bucket (not cumulative), the sum in nanoseconds, the count.
#[derive(Debug)]
struct Counts {
    buckets: [AtomicU64; BOUNDS + 1],
    sum_nanos: AtomicU64,
    count: AtomicU64,
}

impl Counts {
    fn new() -> Self {
        Counts {
            buckets: std::array::from_fn(|_| AtomicU64::new(0)),
            sum_nanos: AtomicU64::new(0),
            count: AtomicU64::new(0),
        }
    }

    fn observe(&self, nanos: u64) {
        // Bucket i holds spans up to 2^i µs: the bit length of the whole microseconds,
        // rounded up.
        let micros = nanos.div_ceil(1000);
        let i = (u64::BITS - micros.saturating_sub(1).leading_zeros()) as usize;
        self.buckets[i.min(BOUNDS)].fetch_add(1, Ordering::Relaxed);
        self.sum_nanos.fetch_add(nanos, Ordering::Relaxed);
        self.count.fetch_add(1, Ordering::Relaxed);
    }
}

/// The phase histograms of every service; clones share the counts.
#[derive(Debug, Clone)]
pub(crate) struct PhaseHistograms {
    services: std::sync::Arc<Vec<(String, [Counts; 7])>>,
}

impl PhaseHistograms {
    /// Histograms for `services` (by name).
    pub(crate) fn new<'a>(services: impl IntoIterator<Item = &'a str>) -> Self {
        PhaseHistograms {
            services: std::sync::Arc::new(
                services
                    .into_iter()
                    .map(|name| (name.to_owned(), std::array::from_fn(|_| Counts::new())))
                    .collect(),
            ),
        }
    }

    /// Counts the phases `timeline` marked, for `service` (ignored if unknown).
    pub(crate) fn record(&self, service: &str, timeline: &Timeline) {
        let Some((_, phases)) = self.services.iter().find(|(name, _)| name == service) else {
            return;
        };
        for (phase, nanos) in timeline.spans() {
            phases[phase as usize].observe(nanos);
        }
    }
}

impl Collector for PhaseHistograms {
    fn encode(&self, mut encoder: DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
        let mut metric = encoder.encode_descriptor(
            "phase_seconds",
            "Time requests spent in each phase on the server, by service: receive (head to body end), queue (admission), decode (parse), request-stages, call (the service), response-stages, encode (answer to sending)",
            None,
            MetricType::Histogram,
        )?;
        for (service, phases) in self.services.iter() {
            for phase in Phase::ALL {
                let counts = &phases[phase as usize];
                let buckets: Vec<(f64, u64)> = counts
                    .buckets
                    .iter()
                    .enumerate()
                    .map(|(i, n)| {
                        let bound = if i < BOUNDS {
                            bound_seconds(i)
                        } else {
                            f64::INFINITY
                        };
                        (bound, n.load(Ordering::Relaxed))
                    })
                    .collect();
                let labels = [("service", service.as_str()), ("phase", phase.name())];
                metric
                    .encode_family(&labels)?
                    .encode_histogram::<NoLabelSet>(
                        counts.sum_nanos.load(Ordering::Relaxed) as f64 / 1e9,
                        counts.count.load(Ordering::Relaxed),
                        &buckets,
                        None,
                    )?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_span_lands_in_the_first_bucket_that_holds_it() {
        let counts = Counts::new();
        for nanos in [0, 1000, 1001, 2000, 3000, 1_000_000_000_000] {
            counts.observe(nanos);
        }
        let n = |i: usize| counts.buckets[i].load(Ordering::Relaxed);
        // ≤ 1 µs: 0 and 1000 ns; ≤ 2 µs: 1001 and 2000; ≤ 4 µs: 3000; +Inf: 1000 s.
        assert_eq!((n(0), n(1), n(2), n(BOUNDS)), (2, 2, 1, 1));
        assert_eq!(counts.count.load(Ordering::Relaxed), 6);
    }
}
