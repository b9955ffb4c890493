//! Prometheus metrics: requests and faults by service, operation and code, latency,
//! in-flight, bytes, connections and the build.

use crate::op_metrics::{CodeLabels, FaultLabels, Operation, RequestFamilies, ServiceOps};
use lather_envelope::QName;
use lather_pipeline::FnvMap;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use std::time::Duration;

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
    families: RequestFamilies,
    in_flight: Gauge,
    /// Connection figures of the listener.
    pub(crate) connections: ConnectionMetrics,
    /// Per-operation handles of the configured services (and of [`NO_SERVICE`]).
    per_service: FnvMap<String, ServiceOps>,
}

impl Metrics {
    /// The metrics of a server with `services`, each labelling at most `max_operations`
    /// operation names of its own (`[server] metrics_max_operations`).
    pub(crate) fn new<'a>(
        services: impl IntoIterator<Item = &'a str>,
        max_operations: usize,
    ) -> Self {
        Self::with(
            services,
            max_operations,
            (RequestFamilies::new(), Gauge::default()),
            None,
        )
    }

    /// The metrics of a reloaded configuration serving `services`: every count, the
    /// requests in flight and the connection figures go on from these; read-at-scrape
    /// collectors are registered anew (and each service's operation cap counts afresh).
    pub(crate) fn carried<'a>(
        &self,
        services: impl IntoIterator<Item = &'a str>,
        max_operations: usize,
    ) -> Self {
        Self::with(
            services,
            max_operations,
            (self.families.clone(), self.in_flight.clone()),
            Some(&self.connections),
        )
    }

    fn with<'a>(
        services: impl IntoIterator<Item = &'a str>,
        max_operations: usize,
        (families, in_flight): (RequestFamilies, Gauge),
        connections: Option<&ConnectionMetrics>,
    ) -> Self {
        let mut registry = Registry::with_prefix("lather");
        registry.register(
            "requests",
            "Requests answered, by service, HTTP status and operation",
            families.requests.clone(),
        );
        registry.register(
            "faults",
            "SOAP faults raised by lather, by service, fault name and operation",
            families.faults.clone(),
        );
        registry.register(
            "request_duration_seconds",
            "Time from request head to response, by service and operation",
            families.latency.clone(),
        );
        registry.register(
            "in_flight_requests",
            "Requests being handled now",
            in_flight.clone(),
        );
        registry.register(
            "request_bytes",
            "Request body bytes received (before decoding), by service and operation",
            families.bytes_in.clone(),
        );
        registry.register(
            "response_bytes",
            "Response body bytes sent, by service and operation",
            families.bytes_out.clone(),
        );
        let connections = ConnectionMetrics::register(&mut registry, connections);
        registry.register_collector(Box::new(crate::build_info::BuildInfo));
        let per_service = services
            .into_iter()
            .chain([NO_SERVICE])
            .map(|name| {
                let ops = ServiceOps::new(&families, name, max_operations);
                (name.to_owned(), ops)
            })
            .collect();
        Metrics {
            registry,
            families,
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

    /// Counts one request in flight until the guard drops (a borrow: no reference count
    /// is taken per request).
    pub(crate) fn in_flight(&self) -> Counting<'_> {
        self.in_flight.inc();
        Counting(&self.in_flight)
    }

    /// How `service` (serving `declared`; empty: any operation) labels a request for
    /// operation `op`: see [`ServiceOps::operation`]. `None` for an unknown service.
    pub(crate) fn operation(
        &self,
        service: &str,
        declared: &[QName],
        op: Option<&QName>,
    ) -> Option<Operation> {
        Some(self.per_service.get(service)?.operation(declared, op))
    }

    /// The handles for a request to `service` labelled `operation` (none: no operation).
    fn handles<'a>(
        &'a self,
        service: &str,
        operation: Option<&'a Operation>,
    ) -> Option<&'a Operation> {
        operation.or_else(|| self.per_service.get(service).map(ServiceOps::none))
    }

    /// Records one answered request.
    pub(crate) fn answered(
        &self,
        service: &str,
        operation: Option<&Operation>,
        code: u16,
        elapsed: Duration,
        bytes_in: u64,
        bytes_out: u64,
    ) {
        let Some(Operation(handles)) = self.handles(service, operation) else {
            return;
        };
        if code == 200 {
            handles.ok.inc();
        } else {
            let labels = CodeLabels {
                service: handles.service.clone(),
                code,
                operation: handles.operation.clone(),
            };
            self.families.requests.get_or_create(&labels).inc();
        }
        handles.latency.observe(elapsed.as_secs_f64());
        handles.bytes_in.inc_by(bytes_in);
        handles.bytes_out.inc_by(bytes_out);
    }

    /// Records a fault lather raised.
    pub(crate) fn fault(&self, service: &str, operation: Option<&Operation>, fault: &'static str) {
        let Some(Operation(handles)) = self.handles(service, operation) else {
            return;
        };
        self.families
            .faults
            .get_or_create(&FaultLabels {
                service: handles.service.clone(),
                fault,
                operation: handles.operation.clone(),
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
    moved: Counter,
}

impl ConnectionMetrics {
    /// Registers `carried` figures (from before a reload), or new ones.
    fn register(registry: &mut Registry, carried: Option<&ConnectionMetrics>) -> Self {
        let metrics = carried.cloned().unwrap_or_else(|| ConnectionMetrics {
            open: Gauge::default(),
            refused: Family::default(),
            idle_closed: Counter::default(),
            accept_errors: Counter::default(),
            tls_failed: Family::default(),
            moved: Counter::default(),
        });
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
        registry.register(
            "connections_moved",
            "Connections moved between two requests to the I/O thread of the CPU their packets arrive on, or off a saturated one (pin_io_threads, roam_connections)",
            metrics.moved.clone(),
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

    /// Counts a connection moved to another I/O thread.
    pub(crate) fn moved(&self) {
        self.moved.inc();
    }

    /// Counts a failed accept.
    pub(crate) fn accept_error(&self) {
        self.accept_errors.inc();
    }
}

/// Decrements a gauge it holds (connections open) when dropped.
#[derive(Debug)]
pub(crate) struct InFlight(Gauge);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.dec();
    }
}

/// Decrements a gauge it borrows (requests in flight) when dropped.
#[derive(Debug)]
pub(crate) struct Counting<'a>(&'a Gauge);

impl Drop for Counting<'_> {
    fn drop(&mut self) {
        self.0.dec();
    }
}
