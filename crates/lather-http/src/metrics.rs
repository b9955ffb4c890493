//! Prometheus metrics: requests and faults by service and code, latency, in-flight, bytes.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use std::collections::HashMap;
use std::time::Duration;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CodeLabels {
    service: String,
    code: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct FaultLabels {
    service: String,
    fault: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ServiceLabels {
    service: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReasonLabels {
    reason: &'static str,
}

/// The label used for requests that matched no service.
pub(crate) const NO_SERVICE: &str = "-";

/// All metrics of one server, with the registry that renders them.
#[derive(Debug)]
pub(crate) struct Metrics {
    registry: Registry,
    requests: Family<CodeLabels, Counter>,
    faults: Family<FaultLabels, Counter>,
    in_flight: Gauge,
    /// Connection figures of the listener.
    pub(crate) connections: ConnectionMetrics,
    /// Handles of the configured services, made once so the hot path neither allocates
    /// labels nor takes the families' locks.
    per_service: HashMap<String, ServiceHandles>,
}

/// One service's metric handles (clones share the values registered in the families).
#[derive(Debug)]
struct ServiceHandles {
    ok: Counter,
    latency: Histogram,
    bytes_in: Counter,
    bytes_out: Counter,
}

fn latency_histogram() -> Histogram {
    // 50 µs … ~52 s, doubling.
    Histogram::new(exponential_buckets(0.000_05, 2.0, 21))
}

impl Metrics {
    pub(crate) fn new<'a>(services: impl IntoIterator<Item = &'a str>) -> Self {
        let mut registry = Registry::with_prefix("lather");
        let requests = Family::<CodeLabels, Counter>::default();
        let faults = Family::<FaultLabels, Counter>::default();
        let latency = Family::<ServiceLabels, Histogram, fn() -> Histogram>::new_with_constructor(
            latency_histogram,
        );
        let in_flight = Gauge::default();
        let bytes_in = Family::<ServiceLabels, Counter>::default();
        let bytes_out = Family::<ServiceLabels, Counter>::default();
        registry.register(
            "requests",
            "Requests answered, by service and HTTP status",
            requests.clone(),
        );
        registry.register(
            "faults",
            "SOAP faults raised by lather, by service and fault name",
            faults.clone(),
        );
        registry.register(
            "request_duration_seconds",
            "Time from request head to response, by service",
            latency.clone(),
        );
        registry.register(
            "in_flight_requests",
            "Requests being handled now",
            in_flight.clone(),
        );
        registry.register(
            "request_bytes",
            "Request body bytes received (before decoding)",
            bytes_in.clone(),
        );
        registry.register(
            "response_bytes",
            "Response body bytes sent",
            bytes_out.clone(),
        );
        let connections = ConnectionMetrics::register(&mut registry);
        let per_service = services
            .into_iter()
            .chain([NO_SERVICE])
            .map(|name| {
                let svc = ServiceLabels {
                    service: name.to_owned(),
                };
                let ok = CodeLabels {
                    service: name.to_owned(),
                    code: 200,
                };
                let handles = ServiceHandles {
                    ok: requests.get_or_create(&ok).clone(),
                    latency: latency.get_or_create(&svc).clone(),
                    bytes_in: bytes_in.get_or_create(&svc).clone(),
                    bytes_out: bytes_out.get_or_create(&svc).clone(),
                };
                (name.to_owned(), handles)
            })
            .collect();
        Metrics {
            registry,
            requests,
            faults,
            in_flight,
            connections,
            per_service,
        }
    }

    /// Adds metrics read at scrape time.
    pub(crate) fn register_collector(
        &mut self,
        collector: impl prometheus_client::collector::Collector,
    ) {
        self.registry.register_collector(Box::new(collector));
    }

    /// Counts one request in flight until the guard drops.
    pub(crate) fn in_flight(&self) -> InFlight {
        self.in_flight.inc();
        InFlight(self.in_flight.clone())
    }

    /// Records one answered request.
    pub(crate) fn answered(
        &self,
        service: &str,
        code: u16,
        elapsed: Duration,
        bytes_in: u64,
        bytes_out: u64,
    ) {
        let Some(handles) = self.per_service.get(service) else {
            return;
        };
        if code == 200 {
            handles.ok.inc();
        } else {
            let labels = CodeLabels {
                service: service.to_owned(),
                code,
            };
            self.requests.get_or_create(&labels).inc();
        }
        handles.latency.observe(elapsed.as_secs_f64());
        handles.bytes_in.inc_by(bytes_in);
        handles.bytes_out.inc_by(bytes_out);
    }

    /// Records a fault lather raised.
    pub(crate) fn fault(&self, service: &str, fault: &'static str) {
        self.faults
            .get_or_create(&FaultLabels {
                service: service.to_owned(),
                fault,
            })
            .inc();
    }

    /// The Prometheus text exposition.
    pub(crate) fn render(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}

/// What the listener counts: open connections, refusals, idle closes, accept errors, failed
/// TLS handshakes.
#[derive(Debug, Clone)]
pub(crate) struct ConnectionMetrics {
    open: Gauge,
    refused: Family<ReasonLabels, Counter>,
    idle_closed: Counter,
    accept_errors: Counter,
    tls_failed: Family<ReasonLabels, Counter>,
}

impl ConnectionMetrics {
    fn register(registry: &mut Registry) -> Self {
        let metrics = ConnectionMetrics {
            open: Gauge::default(),
            refused: Family::default(),
            idle_closed: Counter::default(),
            accept_errors: Counter::default(),
            tls_failed: Family::default(),
        };
        registry.register(
            "connections_open",
            "Client connections open now",
            metrics.open.clone(),
        );
        registry.register(
            "connections_refused",
            "Connections closed at accept because a cap was reached, by reason (max_connections, max_connections_per_client)",
            metrics.refused.clone(),
        );
        registry.register(
            "connections_idle_closed",
            "Connections closed because they sent nothing for idle_timeout_ms",
            metrics.idle_closed.clone(),
        );
        registry.register(
            "accept_errors",
            "Failed accepts (e.g. out of file descriptors)",
            metrics.accept_errors.clone(),
        );
        registry.register(
            "tls_handshake_failures",
            "TLS handshakes on the listener that failed, by reason (error: refused or broken, e.g. an untrusted or missing client certificate or a plain HTTP request; timeout: not done within header_timeout_ms)",
            metrics.tls_failed.clone(),
        );
        // Both reasons appear from the start, at 0.
        for reason in ["max_connections", "max_connections_per_client"] {
            let _ = metrics.refused.get_or_create(&ReasonLabels { reason });
        }
        for reason in ["error", "timeout"] {
            let _ = metrics.tls_failed.get_or_create(&ReasonLabels { reason });
        }
        metrics
    }

    /// Counts a failed TLS handshake (`reason`: `error` or `timeout`).
    pub(crate) fn tls_failed(&self, reason: &'static str) {
        self.tls_failed
            .get_or_create(&ReasonLabels { reason })
            .inc();
    }

    /// Counts one connection open until the guard drops.
    pub(crate) fn opened(&self) -> InFlight {
        self.open.inc();
        InFlight(self.open.clone())
    }

    /// Counts a connection refused because the cap `reason` (the key's name) was reached.
    pub(crate) fn refused(&self, reason: &'static str) {
        self.refused.get_or_create(&ReasonLabels { reason }).inc();
    }

    /// Counts a connection closed for idleness.
    pub(crate) fn idle_closed(&self) {
        self.idle_closed.inc();
    }

    /// Counts a failed accept.
    pub(crate) fn accept_error(&self) {
        self.accept_errors.inc();
    }
}

/// Decrements a gauge (requests in flight, connections open) when dropped.
#[derive(Debug)]
pub(crate) struct InFlight(Gauge);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.dec();
    }
}
