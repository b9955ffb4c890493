//! The `event-source` builtin over HTTP: WS-Eventing and WS-BaseNotification requests at the
//! service's path (source and subscription manager in one), events published at
//! `{path}/publish` or as a `wsnt:Notify` to the path.

use crate::dispatch::service_location;
use crate::respond::{self, HttpResponse};
use crate::service::{PUBLISH_SUFFIX, Service};
use crate::state::State;
use bytes::Bytes;
use http::StatusCode;
use http::request::Parts;
use lather_envelope::{Envelope, Fault, QName, WSA04_NS, WSA10_NS};
use lather_eventing::{EventSource, LATHER_EVENTING_NS};
use lather_pipeline::Context;

/// Answers one message to an event source: a publish (at `{path}/publish`) or an eventing
/// request.
pub(crate) async fn respond(
    state: &State,
    source: &EventSource,
    service: &Service,
    parts: &Parts,
    envelope: &Envelope,
    context: &Context,
) -> Result<HttpResponse, Fault> {
    let version = envelope.version();
    if parts.uri.path() != service.path && parts.uri.path().ends_with(PUBLISH_SUFFIX) {
        let action = context
            .action
            .as_deref()
            .filter(|a| !a.is_empty())
            .map(str::to_owned)
            .or_else(|| wsa_action(envelope));
        // Queued in memory only (`durable="false"`): a crash loses what is queued and not
        // yet delivered (docs/eventing.md "Durability"). A publish beyond the source's
        // byte bound is refused (PublishQueueFull, 503 with Retry-After).
        let queued = source.publish(envelope, action.as_deref())?;
        let body = format!(
            r#"<?xml version="1.0" encoding="UTF-8"?><s:Envelope xmlns:s="{}"><s:Body><lev:Published xmlns:lev="{LATHER_EVENTING_NS}" queued="{queued}" durable="false"/></s:Body></s:Envelope>"#,
            version.namespace()
        );
        return Ok(respond::soap(StatusCode::OK, version, Bytes::from(body)));
    }
    let manager = service_location(state, service, parts);
    // The subscriber identity for the per-identity quota: the client's address until a
    // wsse identity is carried in the context (a later change puts it there).
    let identity = context.client.as_deref();
    let answer = source.handle_for(envelope, &manager, identity).await?;
    if answer.is_empty() {
        // A one-way message (wsnt:Notify): accepted, nothing to answer.
        return Ok(respond::soap(StatusCode::ACCEPTED, version, answer));
    }
    Ok(respond::soap(StatusCode::OK, version, answer))
}

/// The request's `wsa:Action`, in either addressing version.
fn wsa_action(envelope: &Envelope) -> Option<String> {
    [WSA10_NS, WSA04_NS].into_iter().find_map(|ns| {
        let block = envelope.header(&QName::new(ns, "Action"))?;
        envelope.header_text(block)
    })
}
