//! Metrics read at scrape time from the event sources: the bytes their sinks hold, their
//! live delivery tasks, and the notifications dropped and publishes refused by the bounds.

use crate::service::Service;
use lather_eventing::EventSource;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use std::sync::Arc;

/// One metric: name, help, type, and its value for a source.
type SourceMetric = (
    &'static str,
    &'static str,
    MetricType,
    fn(&EventSource) -> u64,
);

const METRICS: [SourceMetric; 4] = [
    (
        "eventing_queued_bytes",
        "Bytes of events the sinks hold (each event once), by event-source service",
        MetricType::Gauge,
        EventSource::queued_bytes,
    ),
    (
        "eventing_delivery_tasks",
        "Delivery tasks running (one per live subscription), by event-source service",
        MetricType::Gauge,
        |s| s.delivery_tasks() as u64,
    ),
    (
        "eventing_dropped_notifications",
        "Notifications dropped for one sink, its queue full by count or sink_queue_bytes",
        MetricType::Counter,
        EventSource::dropped_notifications,
    ),
    (
        "eventing_refused_publishes",
        "Publishes refused with PublishQueueFull (queue_bytes_total reached)",
        MetricType::Counter,
        EventSource::refused_publishes,
    ),
];

/// Writes the event sources' metrics (nothing when there is none).
pub(crate) fn encode(
    services: &[Arc<Service>],
    encoder: &mut DescriptorEncoder<'_>,
) -> Result<(), std::fmt::Error> {
    let sources: Vec<(&str, &EventSource)> = services
        .iter()
        .filter_map(|s| {
            s.event_source
                .as_ref()
                .map(|source| (s.name.as_str(), source))
        })
        .collect();
    if sources.is_empty() {
        return Ok(());
    }
    for (name, help, kind, value) in METRICS {
        let mut metric = encoder.encode_descriptor(name, help, None, kind)?;
        for (service, source) in &sources {
            let labels = [("service", *service)];
            let v = value(source);
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
