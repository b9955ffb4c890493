//! OpenTelemetry trace export (`[telemetry]`, cargo feature `otel`): the `tracing` layer
//! that turns lather's spans (target [`TARGET`]) into OTel spans, batched on a thread of
//! their own and posted over OTLP/HTTP (protobuf), and the W3C Trace Context propagation
//! the library crates use through [`lather_pipeline::telemetry`].

use lather_config::TelemetryConfig;
use lather_pipeline::telemetry::{Propagation, TARGET};
use opentelemetry::propagation::{Extractor, TextMapPropagator};
use opentelemetry::trace::{TraceContextExt, TracerProvider as _};
use opentelemetry_otlp::{WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{Sampler, SdkTracerProvider, SpanData, SpanExporter};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::Layer;
use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::registry::LookupSpan;

/// Export failures are logged at most this often (with a count of what failed since).
const WARN_EVERY: Duration = Duration::from_secs(60);

/// The running export: flushes what is queued and stops its thread when dropped.
#[derive(Debug)]
pub(crate) struct Exporter {
    provider: SdkTracerProvider,
}

impl Drop for Exporter {
    fn drop(&mut self) {
        // Flushes the queue; a collector that is down costs at most the export timeout.
        let _ = self.provider.shutdown();
    }
}

/// The layer exporting lather's spans as `telemetry` says (an `https://` collector
/// verified with `tls`), and the [`Exporter`] to keep until the process ends. Installs
/// the W3C propagation, so spans are created from now on.
pub(crate) fn layer<S>(
    telemetry: &TelemetryConfig,
    tls: &lather_client::OutboundTls,
) -> anyhow::Result<(impl Layer<S> + use<S>, Exporter)>
where
    S: tracing::Subscriber + for<'a> LookupSpan<'a> + Send + Sync,
{
    let url = telemetry.traces_url();
    let timeout = Duration::from_millis(telemetry.export_timeout_ms);
    // rustls with the ring provider and lather's trust, as every outbound call.
    let client = reqwest::blocking::Client::builder()
        .tls_backend_preconfigured((*tls.client_config()).clone())
        .timeout(timeout)
        .build()?;
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_http_client(client)
        .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
        .with_endpoint(url.clone())
        .with_timeout(timeout)
        .build()?;
    let sampler =
        Sampler::ParentBased(Box::new(Sampler::TraceIdRatioBased(telemetry.sample_ratio)));
    let provider = SdkTracerProvider::builder()
        .with_batch_exporter(Warned::new(exporter, url))
        .with_sampler(sampler)
        .with_resource(
            Resource::builder_empty()
                .with_service_name(telemetry.service_name.clone())
                .build(),
        )
        .build();
    let tracer = provider.tracer("lather");
    let layer = tracing_opentelemetry::layer()
        .with_tracer(tracer)
        .with_tracked_inactivity(false)
        .with_threads(false)
        .with_location(false)
        .with_filter(Targets::new().with_target(TARGET, LevelFilter::INFO));
    lather_pipeline::telemetry::install(W3c(TraceContextPropagator::new()));
    Ok((layer, Exporter { provider }))
}

/// W3C Trace Context in and out of `tracing` spans.
#[derive(Debug)]
struct W3c(TraceContextPropagator);

/// A carrier holding one `traceparent` value.
struct Traceparent<'a>(&'a str);

impl Extractor for Traceparent<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        key.eq_ignore_ascii_case("traceparent").then_some(self.0)
    }

    fn keys(&self) -> Vec<&str> {
        vec!["traceparent"]
    }
}

impl Propagation for W3c {
    fn continue_from(&self, span: &tracing::Span, traceparent: &str) {
        let parent = self.0.extract(&Traceparent(traceparent));
        if parent.span().span_context().is_valid() {
            let _ = span.set_parent(parent);
        }
    }

    fn traceparent(&self, span: &tracing::Span) -> Option<String> {
        let context = span.context();
        let span = context.span();
        let ids = span.span_context();
        ids.is_valid().then(|| {
            format!(
                "00-{}-{}-{:02x}",
                ids.trace_id(),
                ids.span_id(),
                ids.trace_flags().to_u8()
            )
        })
    }
}

/// An exporter whose failures are logged at warn, at most once a [`WARN_EVERY`]: a
/// collector that is down costs a line a minute, never the request path.
#[derive(Debug)]
struct Warned<E> {
    inner: E,
    url: String,
    last_warned: Mutex<Option<Instant>>,
    failed_batches: AtomicU64,
    failed_spans: AtomicU64,
}

impl<E> Warned<E> {
    fn new(inner: E, url: String) -> Self {
        Warned {
            inner,
            url,
            last_warned: Mutex::new(None),
            failed_batches: AtomicU64::new(0),
            failed_spans: AtomicU64::new(0),
        }
    }

    /// Counts a failed export of `spans` spans and logs it unless a warning was logged
    /// less than [`WARN_EVERY`] before `now`; the batches and spans the warning counts.
    fn failed(
        &self,
        spans: usize,
        error: &dyn std::fmt::Display,
        now: Instant,
    ) -> Option<(u64, u64)> {
        self.failed_batches.fetch_add(1, Ordering::Relaxed);
        self.failed_spans.fetch_add(spans as u64, Ordering::Relaxed);
        let mut last = self.last_warned.lock().unwrap_or_else(|e| e.into_inner());
        if last.is_some_and(|at| now.duration_since(at) < WARN_EVERY) {
            return None;
        }
        *last = Some(now);
        drop(last);
        let batches = self.failed_batches.swap(0, Ordering::Relaxed);
        let spans = self.failed_spans.swap(0, Ordering::Relaxed);
        tracing::warn!(
            collector = %self.url,
            error = %error,
            batches,
            spans,
            "trace export failed; spans dropped (logged at most once a minute)"
        );
        Some((batches, spans))
    }
}

impl<E: SpanExporter> SpanExporter for Warned<E> {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let spans = batch.len();
        let result = self.inner.export(batch).await;
        if let Err(e) = &result {
            self.failed(spans, e, Instant::now());
        }
        result
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn export_failures_are_warned_at_most_once_a_minute_with_what_failed_since() {
        let warned = Warned::new((), "http://c:4318/v1/traces".to_owned());
        let start = Instant::now();
        assert_eq!(warned.failed(3, &"refused", start), Some((1, 3)));
        assert_eq!(
            warned.failed(2, &"refused", start + Duration::from_secs(1)),
            None
        );
        assert_eq!(
            warned.failed(4, &"refused", start + Duration::from_secs(59)),
            None
        );
        assert_eq!(
            warned.failed(1, &"refused", start + WARN_EVERY),
            Some((3, 7)),
            "the next warning counts the failures it stood for"
        );
    }

    #[test]
    fn a_traceparent_header_is_read_only_under_its_name() {
        let carrier = Traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
        assert_eq!(carrier.get("TraceParent"), Some(carrier.0));
        assert_eq!(carrier.get("tracestate"), None);
        let cx = TraceContextPropagator::new().extract(&carrier);
        let span = cx.span();
        let ids = span.span_context();
        assert_eq!(
            ids.trace_id().to_string(),
            "4bf92f3577b34da6a3ce929d0e0e4736"
        );
        assert!(ids.is_remote() && ids.is_sampled());
    }
}
