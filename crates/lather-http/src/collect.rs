//! Metrics read at scrape time from the engine: handler counters and admission gates.

use crate::service::Service;
use lather_pipeline::{Counters, GateStats, ObservationKind, Step};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// Reads every service's gate and every step of its plans when `/metrics` is scraped.
#[derive(Debug)]
pub(crate) struct EngineCollector {
    services: Vec<Arc<Service>>,
}

impl EngineCollector {
    pub(crate) fn new(services: Vec<Arc<Service>>) -> Self {
        EngineCollector { services }
    }
}

type Labels<'a> = [(&'static str, &'a str); 2];

/// A metric read from one counter of a step: name, help, the counter.
type CounterMetric = (&'static str, &'static str, fn(&Counters) -> &AtomicU64);

/// A gauge read from a gate: name, help, the value.
type GateGauge = (&'static str, &'static str, fn(&GateStats) -> i64);

/// The handler counters, by metric name and help.
const HANDLER_COUNTERS: [CounterMetric; 6] = [
    (
        "handler_calls",
        "Handler calls (first attempts), by service, flow and handler",
        |c| &c.calls,
    ),
    (
        "handler_retries",
        "Handler retries after a timeout or panic",
        |c| &c.retries,
    ),
    (
        "handler_timeouts",
        "Handler attempts that ran out of time",
        |c| &c.timeouts,
    ),
    ("handler_panics", "Handler attempts that panicked", |c| {
        &c.panics
    }),
    (
        "handler_ignored_failures",
        "Failures of handlers with must_perform = false",
        |c| &c.ignored_failures,
    ),
    (
        "handler_oneway_failures",
        "Failures of oneway handlers",
        |c| &c.oneway_failures,
    ),
];

impl Collector for EngineCollector {
    fn encode(&self, mut encoder: DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
        for (name, help, field) in HANDLER_COUNTERS {
            let mut metric = encoder.encode_descriptor(name, help, None, MetricType::Counter)?;
            for service in &self.services {
                for step in service_steps(service) {
                    let labels: Labels<'_> = [("service", &service.name), ("handler", step.name())];
                    let value = field(step.counters()).load(Ordering::Relaxed);
                    ConstCounter::new(value).encode(metric.encode_family(&labels)?)?;
                }
            }
        }
        let gauges: [GateGauge; 3] = [
            (
                "admission_in_flight",
                "Requests admitted and not yet answered, by service",
                |s| s.in_flight as i64,
            ),
            (
                "admission_queued",
                "Requests waiting for admission, by service",
                |s| s.queued as i64,
            ),
            (
                "admission_limit",
                "The in-flight limit now (adaptive or fixed), by service",
                |s| s.limit as i64,
            ),
        ];
        let stats: Vec<_> = self
            .services
            .iter()
            .map(|s| (s.name.as_str(), s.gate.stats()))
            .collect();
        for (name, help, field) in gauges {
            let mut metric = encoder.encode_descriptor(name, help, None, MetricType::Gauge)?;
            for (service, s) in &stats {
                ConstGauge::new(field(s))
                    .encode(metric.encode_family(&[("service", *service)])?)?;
            }
        }
        self.encode_observations(&mut encoder)?;
        let mut refused = encoder.encode_descriptor(
            "admission_refused",
            "Requests refused with 503 because the queue was full, by service",
            None,
            MetricType::Counter,
        )?;
        for (service, s) in &stats {
            ConstCounter::new(s.refused)
                .encode(refused.encode_family(&[("service", *service)])?)?;
        }
        let mut over = encoder.encode_descriptor(
            "eventing_filters_over_budget",
            "XPath filter evaluations stopped at filter_budget (the event was not taken), by event source",
            None,
            MetricType::Counter,
        )?;
        for service in &self.services {
            if let Some(source) = &service.event_source {
                ConstCounter::new(source.filters_over_budget())
                    .encode(over.encode_family(&[("service", service.name.as_str())])?)?;
            }
        }
        crate::collect_eventing::encode(&self.services, &mut encoder)?;
        Ok(())
    }
}

impl EngineCollector {
    /// Handlers' own figures ([`Handler::observations`](lather_pipeline::Handler)), one
    /// metric family per name, labelled with the service and handler first.
    fn encode_observations(
        &self,
        encoder: &mut DescriptorEncoder<'_>,
    ) -> Result<(), std::fmt::Error> {
        type Family = (
            &'static str,
            ObservationKind,
            Vec<(Vec<(&'static str, String)>, u64)>,
        );
        let mut families: BTreeMap<&'static str, Family> = BTreeMap::new();
        for service in &self.services {
            for step in service_steps(service) {
                for o in step.observations() {
                    let mut labels = vec![
                        ("service", service.name.clone()),
                        ("handler", step.name().to_owned()),
                    ];
                    labels.extend(o.labels);
                    families
                        .entry(o.name)
                        .or_insert((o.help, o.kind, Vec::new()))
                        .2
                        .push((labels, o.value));
                }
            }
        }
        for (name, (help, kind, samples)) in families {
            let metric_type = match kind {
                ObservationKind::Counter => MetricType::Counter,
                ObservationKind::Gauge => MetricType::Gauge,
            };
            let mut metric = encoder.encode_descriptor(name, help, None, metric_type)?;
            for (labels, value) in samples {
                let family = metric.encode_family(&labels)?;
                match kind {
                    ObservationKind::Counter => ConstCounter::new(value).encode(family)?,
                    ObservationKind::Gauge => {
                        ConstGauge::new(i64::try_from(value).unwrap_or(i64::MAX)).encode(family)?
                    }
                }
            }
        }
        Ok(())
    }
}

/// Each step a service may run — in its flows or its routes' — once.
fn service_steps(service: &Service) -> Vec<&Arc<Step>> {
    let plans = &service.plans;
    let all = [&plans.request, &plans.response]
        .into_iter()
        .chain(plans.routes.iter().flat_map(|r| [&r.request, &r.response]));
    let mut steps: Vec<&Arc<Step>> = Vec::new();
    for step in all.flat_map(|p| p.stages().iter().flatten()) {
        if !steps.iter().any(|s| Arc::ptr_eq(s, step)) {
            steps.push(step);
        }
    }
    steps
}
