//! `/metrics` for gateway backends: tries, failures by kind, answer latency, requests in
//! flight and standing, each by service and backend URL.

use crate::gateway::{Backend, FailureKind};
use crate::service::Service;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric, MetricEncoder};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use std::sync::Arc;
use std::time::Instant;

/// Renders the `lather_upstream_*` series of every gateway service.
#[derive(Debug)]
pub(crate) struct UpstreamCollector(pub(crate) Vec<Arc<Service>>);

/// The backend lists of the gateway services, by service name.
type Lists<'a> = [(&'a str, Arc<Vec<Arc<Backend>>>)];

impl Collector for UpstreamCollector {
    fn encode(&self, mut encoder: DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
        let lists: Vec<(&str, Arc<Vec<Arc<Backend>>>)> = self
            .0
            .iter()
            .filter_map(|s| Some((s.name.as_str(), s.upstreams.as_ref()?.snapshot())))
            .collect();
        let now = Instant::now();
        per_backend(
            &mut encoder,
            ("upstream_requests", "Tries sent to each gateway backend"),
            MetricType::Counter,
            &lists,
            |b, m| ConstCounter::new(b.requests()).encode(m),
        )?;
        let mut metric = encoder.encode_descriptor(
            "upstream_failures",
            "Failed tries at each gateway backend, by kind: refused, connect_timeout, timeout (sent, no answer in time), failed (sent, connection or answer failed)",
            None,
            MetricType::Counter,
        )?;
        for (service, list) in &lists {
            for b in list.iter() {
                for kind in FailureKind::ALL {
                    ConstCounter::new(b.failures(kind)).encode(metric.encode_family(&[
                        ("service", *service),
                        ("backend", b.upstream.url.as_str()),
                        ("kind", kind.name()),
                    ])?)?;
                }
            }
        }
        per_backend(
            &mut encoder,
            (
                "upstream_duration_seconds",
                "Time from sending a request to a gateway backend to its whole answer, answered tries only",
            ),
            MetricType::Histogram,
            &lists,
            |b, m| b.latency.encode(m),
        )?;
        per_backend(
            &mut encoder,
            (
                "upstream_outstanding",
                "Requests in flight at each gateway backend now",
            ),
            MetricType::Gauge,
            &lists,
            |b, m| ConstGauge::new(b.outstanding() as i64).encode(m),
        )?;
        per_backend(
            &mut encoder,
            (
                "upstream_state",
                "Each gateway backend's standing: 0 up, 1 ejected after failures in a row, 2 down by health checks",
            ),
            MetricType::Gauge,
            &lists,
            |b, m| ConstGauge::new(b.standing(now).gauge()).encode(m),
        )
    }
}

/// One series labelled by service and backend: `value` writes each backend's.
fn per_backend(
    encoder: &mut DescriptorEncoder<'_>,
    (name, help): (&str, &str),
    kind: MetricType,
    lists: &Lists<'_>,
    value: impl Fn(&Backend, MetricEncoder<'_>) -> Result<(), std::fmt::Error>,
) -> Result<(), std::fmt::Error> {
    let mut metric = encoder.encode_descriptor(name, help, None, kind)?;
    for (service, list) in lists {
        for b in list.iter() {
            value(
                b,
                metric.encode_family(&[
                    ("service", *service),
                    ("backend", b.upstream.url.as_str()),
                ])?,
            )?;
        }
    }
    Ok(())
}
