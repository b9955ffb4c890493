//! Prometheus metrics: requests and faults by service and code, latency, in-flight, bytes.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
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

/// The label used for requests that matched no service.
pub(crate) const NO_SERVICE: &str = "-";

/// All metrics of one server, with the registry that renders them.
#[derive(Debug)]
pub(crate) struct Metrics {
    registry: Registry,
    requests: Family<CodeLabels, Counter>,
    faults: Family<FaultLabels, Counter>,
    latency: Family<ServiceLabels, Histogram, fn() -> Histogram>,
    in_flight: Gauge,
    bytes_in: Family<ServiceLabels, Counter>,
    bytes_out: Family<ServiceLabels, Counter>,
}

fn latency_histogram() -> Histogram {
    // 50 µs … ~52 s, doubling.
    Histogram::new(exponential_buckets(0.000_05, 2.0, 21))
}

impl Metrics {
    pub(crate) fn new() -> Self {
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
        Metrics {
            registry,
            requests,
            faults,
            latency,
            in_flight,
            bytes_in,
            bytes_out,
        }
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
        let svc = ServiceLabels {
            service: service.to_owned(),
        };
        self.requests
            .get_or_create(&CodeLabels {
                service: service.to_owned(),
                code,
            })
            .inc();
        self.latency
            .get_or_create(&svc)
            .observe(elapsed.as_secs_f64());
        self.bytes_in.get_or_create(&svc).inc_by(bytes_in);
        self.bytes_out.get_or_create(&svc).inc_by(bytes_out);
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

/// Decrements the in-flight gauge when dropped.
#[derive(Debug)]
pub(crate) struct InFlight(Gauge);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.dec();
    }
}
