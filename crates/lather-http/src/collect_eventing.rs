//! Metrics read at scrape time from the event sources: subscriptions held, the bytes and
//! notifications their sinks hold (in all, and the fullest sink's), their live delivery
//! tasks, and the notifications dropped and publishes refused by the bounds.
//!
//! Per-sink series would grow with every subscriber, so a sink's depth is exposed only as
//! the largest of the source's sinks; the totals say how much is queued in all.

use crate::service::Service;
use lather_eventing::{EventSource, SinkDepths};
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use std::sync::Arc;

/// One metric: name, help, type, and its value for a source and its sinks' depths.
type SourceMetric = (
    &'static str,
    &'static str,
    MetricType,
    fn(&EventSource, &SinkDepths) -> u64,
);

/// `usize` as a metric value.
fn n(v: usize) -> u64 {
    u64::try_from(v).unwrap_or(u64::MAX)
}

const METRICS: [SourceMetric; 8] = [
    (
        "eventing_subscriptions",
        "Subscriptions the event source holds now, by event-source service",
        MetricType::Gauge,
        |_, d| n(d.subscriptions),
    ),
    (
        "eventing_queued_bytes",
        "Bytes of events the sinks hold (each event once), by event-source service",
        MetricType::Gauge,
        |s, _| s.queued_bytes(),
    ),
    (
        "eventing_queued_notifications",
        "Notifications the sinks hold (queued or being delivered), all sinks together, by event-source service",
        MetricType::Gauge,
        |_, d| n(d.queued_notifications),
    ),
    (
        "eventing_sink_queue_max_notifications",
        "Notifications the fullest sink holds (queued or being delivered), by event-source service",
        MetricType::Gauge,
        |_, d| n(d.largest_sink_notifications),
    ),
    (
        "eventing_sink_queue_max_bytes",
        "Bytes the fullest sink holds (bounded by sink_queue_bytes), by event-source service",
        MetricType::Gauge,
        |_, d| d.largest_sink_bytes,
    ),
    (
        "eventing_delivery_tasks",
        "Delivery tasks running (one per live subscription), by event-source service",
        MetricType::Gauge,
        |s, _| n(s.delivery_tasks()),
    ),
    (
        "eventing_dropped_notifications",
        "Notifications dropped for one sink, its queue full by count or sink_queue_bytes",
        MetricType::Counter,
        |s, _| s.dropped_notifications(),
    ),
    (
        "eventing_refused_publishes",
        "Publishes refused with PublishQueueFull (queue_bytes_total reached)",
        MetricType::Counter,
        |s, _| s.refused_publishes(),
    ),
];

/// Writes the event sources' metrics (nothing when there is none).
pub(crate) fn encode(
    services: &[Arc<Service>],
    encoder: &mut DescriptorEncoder<'_>,
) -> Result<(), std::fmt::Error> {
    let sources: Vec<(&str, &EventSource, SinkDepths)> = services
        .iter()
        .filter_map(|s| {
            s.event_source
                .as_ref()
                .map(|source| (s.name.as_str(), source, source.sink_depths()))
        })
        .collect();
    if sources.is_empty() {
        return Ok(());
    }
    for (name, help, kind, value) in METRICS {
        let mut metric = encoder.encode_descriptor(name, help, None, kind)?;
        for (service, source, depths) in &sources {
            let labels = [("service", *service)];
            let v = value(source, depths);
            if matches!(kind, MetricType::Counter) {
                ConstCounter::new(v).encode(metric.encode_family(&labels)?)?;
            } else {
                ConstGauge::new(i64::try_from(v).unwrap_or(i64::MAX))
                    .encode(metric.encode_family(&labels)?)?;
            }
        }
    }
    Ok(())
}
