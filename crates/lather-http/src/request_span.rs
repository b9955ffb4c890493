//! The exported span of one SOAP request (`soap.request`) and of each upstream call
//! (`upstream.call`), created only when the process exports traces
//! ([`lather_pipeline::telemetry::active`]); otherwise [`Span::none`] and no work.
//!
//! Attributes of `soap.request`: `lather.service`, `soap.operation` (the Body's first
//! child's local name), `http.response.status_code`, `soap.fault.code` (the lather fault's
//! name, when the answer is one) and `client.address`/`client.port`. An incoming W3C
//! `traceparent` header makes the span a child of the caller's.

use crate::arriving::Arriving;
use crate::respond::{Faulted, HttpResponse};
use lather_pipeline::telemetry::{TARGET, active};
use tracing::Span;
use tracing::field::Empty;

/// The `soap.request` span of a request as it arrived, continuing its `traceparent` if
/// it has a valid one.
pub(crate) fn start<B>(arriving: &Arriving<B>) -> Span {
    let Some(propagation) = active() else {
        return Span::none();
    };
    let req = &arriving.request;
    let peer = arriving.peer.addr;
    let span = tracing::info_span!(
        target: TARGET,
        "soap.request",
        otel.kind = "server",
        "lather.service" = Empty,
        "soap.operation" = Empty,
        "http.request.method" = req.method().as_str(),
        "url.path" = req.uri().path(),
        "http.response.status_code" = Empty,
        "soap.fault.code" = Empty,
        otel.status_code = Empty,
        "client.address" = tracing::field::display(peer.ip()),
        "client.port" = peer.port(),
    );
    if let Some(traceparent) = req
        .headers()
        .get("traceparent")
        .and_then(|v| v.to_str().ok())
    {
        propagation.continue_from(&span, traceparent);
    }
    span
}

/// Records the request's operation (its Body's first child's local name).
pub(crate) fn operation(span: &Span, operation: &str) {
    if !span.is_none() {
        span.record("soap.operation", operation);
    }
}

/// Records how the request was answered: its service, status and fault.
pub(crate) fn finish(span: &Span, service: &str, response: &HttpResponse) {
    if span.is_none() {
        return;
    }
    span.record("lather.service", service);
    span.record("http.response.status_code", response.status().as_u16());
    if let Some(fault) = response.extensions().get::<Faulted>() {
        span.record("soap.fault.code", fault.0.spec().name);
        span.record("otel.status_code", "ERROR");
    }
}

/// The `upstream.call` span of one attempt of `service` at backend `url`, a child of the
/// current span (the request's); [`Span::none`] when traces are not exported.
pub(crate) fn upstream(service: &str, url: &str) -> Span {
    if active().is_none() {
        return Span::none();
    }
    tracing::info_span!(
        target: TARGET,
        "upstream.call",
        otel.kind = "client",
        "lather.service" = service,
        "url.full" = url,
        "http.response.status_code" = Empty,
        "error.type" = Empty,
        otel.status_code = Empty,
    )
}

/// Records how an upstream call ended: the backend's status, or why it failed.
pub(crate) fn upstream_result(span: &Span, result: Result<http::StatusCode, &String>) {
    match result {
        Ok(status) => {
            span.record("http.response.status_code", status.as_u16());
            if status.is_server_error() {
                span.record("otel.status_code", "ERROR");
            }
        }
        Err(why) => {
            span.record("error.type", why.as_str());
            span.record("otel.status_code", "ERROR");
        }
    }
}

/// The W3C trace-context header a request to a backend carries.
pub(crate) const TRACEPARENT: http::HeaderName = http::HeaderName::from_static("traceparent");

/// The `traceparent` value of `span`'s context, when `span` is exported: set on a request
/// to a backend, it replaces what the client sent.
pub(crate) fn traceparent(span: &Span) -> Option<http::HeaderValue> {
    lather_pipeline::telemetry::traceparent_of(span)
        .and_then(|t| http::HeaderValue::from_str(&t).ok())
}
