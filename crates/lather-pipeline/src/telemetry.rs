//! Trace spans for an exporter installed by the process (OpenTelemetry in `lather serve`).
//!
//! Nothing here depends on OpenTelemetry: the binary that exports traces [`install`]s a
//! [`Propagation`] once at start, and only then do the library crates create spans (all
//! under [`TARGET`]) and carry W3C `traceparent` headers. Without one, [`active`] is
//! `None` and every span helper returns [`Span::none`], so an untraced request does no
//! span work at all.

use std::sync::OnceLock;
use tracing::Span;

/// The `tracing` target of every span lather creates for export; an exporter's layer
/// filters on it so that no other crate's spans are exported.
pub const TARGET: &str = "lather::trace";

/// What the exporter provides: moving W3C Trace Context in and out of `tracing` spans.
pub trait Propagation: Send + Sync + std::fmt::Debug + 'static {
    /// Makes `span` a child of the remote span named by `traceparent` (a W3C
    /// `traceparent` header value); an invalid value leaves `span` a root.
    fn continue_from(&self, span: &Span, traceparent: &str);
    /// The W3C `traceparent` of `span`, or `None` when `span` is not recorded.
    fn traceparent(&self, span: &Span) -> Option<String>;
}

static INSTALLED: OnceLock<Box<dyn Propagation>> = OnceLock::new();

/// Installs the process's propagation; from then on spans are created. Returns `false`
/// (and changes nothing) if one was installed before.
pub fn install(propagation: impl Propagation) -> bool {
    INSTALLED.set(Box::new(propagation)).is_ok()
}

/// The installed propagation, if traces are exported.
pub fn active() -> Option<&'static dyn Propagation> {
    INSTALLED.get().map(Box::as_ref)
}

/// The W3C `traceparent` of `span` when traces are exported and `span` is recorded.
pub fn traceparent_of(span: &Span) -> Option<String> {
    active().and_then(|p| p.traceparent(span))
}

/// A `soap.stage` span for stage `index` (from 0) of `handlers` handlers, a child of the
/// current span; [`Span::none`] when traces are not exported.
pub fn stage_span(index: usize, handlers: usize) -> Span {
    if active().is_none() {
        return Span::none();
    }
    tracing::info_span!(target: TARGET, "soap.stage", "lather.stage" = index, "lather.stage.handlers" = handlers)
}

/// A `soap.handler` span for handler `name`, a child of the current span, with an empty
/// `lather.handler.outcome` to record; [`Span::none`] when traces are not exported.
pub fn handler_span(name: &str) -> Span {
    if active().is_none() {
        return Span::none();
    }
    tracing::info_span!(
        target: TARGET,
        "soap.handler",
        "lather.handler" = name,
        "lather.handler.outcome" = tracing::field::Empty,
    )
}

/// A `remote.call` span for a call of remote handler `name` on NATS subject `subject`, a
/// child of the current span; [`Span::none`] when traces are not exported.
pub fn remote_call_span(name: &str, subject: &str) -> Span {
    if active().is_none() {
        return Span::none();
    }
    tracing::info_span!(
        target: TARGET,
        "remote.call",
        "lather.handler" = name,
        "messaging.system" = "nats",
        "messaging.destination.name" = subject,
    )
}

/// A `remote.handler` span for a worker running handler `name` for a request that carried
/// `traceparent`, continuing the caller's trace; [`Span::none`] when traces are not
/// exported.
pub fn worker_span(name: &str, traceparent: Option<&str>) -> Span {
    let Some(propagation) = active() else {
        return Span::none();
    };
    let span = tracing::info_span!(
        target: TARGET,
        "remote.handler",
        "lather.handler" = name,
        "messaging.system" = "nats",
    );
    if let Some(traceparent) = traceparent {
        propagation.continue_from(&span, traceparent);
    }
    span
}
