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

/// One phase's counts: per bucket (not cumulative) and the sum in nanoseconds (the count
/// is the buckets' sum).
#[derive(Debug)]
struct Counts {
    buckets: [AtomicU64; BOUNDS + 1],
    sum_nanos: AtomicU64,
}

impl Counts {
    fn new() -> Self {
        Counts {
            buckets: std::array::from_fn(|_| AtomicU64::new(0)),
            sum_nanos: AtomicU64::new(0),
        }
    }

    fn observe(&self, nanos: u64) {
        // Bucket i holds spans up to 2^i µs: the bit length of the whole microseconds,
        // rounded up.
        let micros = nanos.div_ceil(1000);
        let i = (u64::BITS - micros.saturating_sub(1).leading_zeros()) as usize;
        self.buckets[i.min(BOUNDS)].fetch_add(1, Ordering::Relaxed);
        self.sum_nanos.fetch_add(nanos, Ordering::Relaxed);
    }
}

/// One thread group's counts of every phase, on cache lines of their own so that threads
/// recording at once do not contend.
#[derive(Debug)]
#[repr(align(128))]
struct Shard([Counts; 7]);

/// Shards per service: threads take one each in turn, so up to this many record without
/// sharing a counter.
const SHARDS: usize = 8;

thread_local! {
    /// The shard this thread records into.
    static SHARD: usize = {
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        NEXT.fetch_add(1, Ordering::Relaxed) % SHARDS
    };
}

/// The phase histograms of every service; clones share the counts.
#[derive(Debug, Clone)]
pub(crate) struct PhaseHistograms {
    services: std::sync::Arc<Vec<(String, Vec<Shard>)>>,
}

impl PhaseHistograms {
    /// Histograms for `services` (by name).
    pub(crate) fn new<'a>(services: impl IntoIterator<Item = &'a str>) -> Self {
        let shards = || {
            (0..SHARDS)
                .map(|_| Shard(std::array::from_fn(|_| Counts::new())))
                .collect()
        };
        PhaseHistograms {
            services: std::sync::Arc::new(
                services
                    .into_iter()
                    .map(|name| (name.to_owned(), shards()))
                    .collect(),
            ),
        }
    }

    /// Counts the phases `timeline` marked, for `service` (ignored if unknown).
    pub(crate) fn record(&self, service: &str, timeline: &Timeline) {
        let Some((_, shards)) = self.services.iter().find(|(name, _)| name == service) else {
            return;
        };
        let shard = &shards[SHARD.with(|s| *s)];
        for (phase, nanos) in timeline.spans() {
            shard.0[phase as usize].observe(nanos);
        }
    }

    /// A phase's buckets, sum (seconds) and count over every shard.
    fn merged(shards: &[Shard], phase: Phase) -> (Vec<(f64, u64)>, f64, u64) {
        let mut buckets: Vec<(f64, u64)> = (0..=BOUNDS)
            .map(|i| {
                let bound = if i < BOUNDS {
                    bound_seconds(i)
                } else {
                    f64::INFINITY
                };
                (bound, 0)
            })
            .collect();
        let mut sum_nanos = 0u64;
        for shard in shards {
            let counts = &shard.0[phase as usize];
            for (bucket, n) in buckets.iter_mut().zip(&counts.buckets) {
                bucket.1 += n.load(Ordering::Relaxed);
            }
            sum_nanos = sum_nanos.wrapping_add(counts.sum_nanos.load(Ordering::Relaxed));
        }
        let count = buckets.iter().map(|(_, n)| n).sum();
        (buckets, sum_nanos as f64 / 1e9, count)
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
        for (service, shards) in self.services.iter() {
            for phase in Phase::ALL {
                let (buckets, sum, count) = Self::merged(shards, phase);
                let labels = [("service", service.as_str()), ("phase", phase.name())];
                metric
                    .encode_family(&labels)?
                    .encode_histogram::<NoLabelSet>(sum, count, &buckets, None)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_of_every_thread_are_merged() {
        let histograms = PhaseHistograms::new(["s"]);
        let mut timeline = Timeline::new(std::time::Instant::now());
        timeline.mark(Phase::Decode);
        let threads: Vec<_> = (0..12)
            .map(|_| {
                let h = histograms.clone();
                let t = timeline.clone();
                std::thread::spawn(move || h.record("s", &t))
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        histograms.record("unknown", &timeline);
        let (_, _, count) = PhaseHistograms::merged(&histograms.services[0].1, Phase::Decode);
        assert_eq!(count, 12);
        let (_, _, none) = PhaseHistograms::merged(&histograms.services[0].1, Phase::Call);
        assert_eq!(none, 0);
    }

    #[test]
    fn a_span_lands_in_the_first_bucket_that_holds_it() {
        let counts = Counts::new();
        for nanos in [0, 1000, 1001, 2000, 3000, 1_000_000_000_000] {
            counts.observe(nanos);
        }
        let n = |i: usize| counts.buckets[i].load(Ordering::Relaxed);
        // ≤ 1 µs: 0 and 1000 ns; ≤ 2 µs: 1001 and 2000; ≤ 4 µs: 3000; +Inf: 1000 s.
        assert_eq!((n(0), n(1), n(2), n(BOUNDS)), (2, 2, 1, 1));
        assert_eq!(counts.sum_nanos.load(Ordering::Relaxed), 1_000_000_007_001);
    }
}
