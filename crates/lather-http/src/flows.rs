//! Running a service's handler stages: the request flow before the service, the response
//! flow on what it answers.

use crate::respond::{self, HttpResponse};
use bytes::Bytes;
use http::{Response, StatusCode};
use http_body_util::{BodyExt, Full};
use lather_envelope::{Envelope, Fault, Limits, SoapVersion};
use lather_pipeline::{Context, Direction, Message, Outcome, Plan, Reply, ReplyStatus, run};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// What the request flow decided.
#[derive(Debug)]
pub(crate) enum Admitted {
    /// Go on to the service with this (possibly patched) envelope; the context holds the
    /// properties the handlers set.
    Forward(Envelope),
    /// A handler answered; the service is not called.
    Answered(HttpResponse),
}

/// Runs the request flow; `context` takes the properties its handlers set.
pub(crate) async fn request(
    plan: &Plan,
    envelope: Envelope,
    context: &mut Context,
    limits: &Limits,
) -> Result<Admitted, Fault> {
    if plan.is_empty() {
        return Ok(Admitted::Forward(envelope));
    }
    match run(plan, Message::new(envelope, context.clone()), limits).await {
        Outcome::Continue(message) => {
            let (envelope, flowed) = message.into_parts();
            context.properties = flowed.properties;
            Ok(Admitted::Forward(envelope))
        }
        Outcome::Respond(envelope) => Ok(Admitted::Answered(envelope_response(&envelope))),
        Outcome::Fault(fault) => Err(fault),
    }
}

/// A service's answer as an HTTP response, with no stages to run on it.
pub(crate) fn reply_response(reply: Reply, version: SoapVersion) -> HttpResponse {
    match reply {
        Reply::Envelope(envelope) => envelope_response(&envelope),
        Reply::Written(version, bytes) => respond::soap(StatusCode::OK, version, bytes),
        Reply::Accepted => respond::soap(StatusCode::ACCEPTED, version, Bytes::new()),
        Reply::Http(response) => response.map(Full::new),
    }
}

/// Runs the response flow on a SOAP answer, or the fault flow when the service answered
/// with a fault; anything that is not an envelope (a WSDL, a backend's HTML error page, a
/// 202) passes through untouched. An answer that is already an [`Envelope`] is not
/// written and parsed again.
pub(crate) async fn response(
    plan: &Plan,
    fault_plan: &Plan,
    reply: Reply,
    version: SoapVersion,
    context: &Context,
    limits: &Limits,
) -> Result<HttpResponse, Fault> {
    let (parts, envelope) = match reply {
        Reply::Envelope(envelope) => (None, envelope),
        Reply::Accepted => return Ok(reply_response(Reply::Accepted, version)),
        Reply::Written(version, bytes) => {
            let Ok(envelope) = Envelope::parse(bytes.clone(), limits) else {
                return Ok(respond::soap(StatusCode::OK, version, bytes));
            };
            (None, envelope)
        }
        Reply::Http(response) => {
            let (parts, bytes) = response.into_parts();
            let Ok(envelope) = Envelope::parse(bytes.clone(), limits) else {
                return Ok(Response::from_parts(parts, Full::new(bytes)));
            };
            (Some(parts), envelope)
        }
    };
    let (plan, mut context) = if envelope.is_fault() {
        let context = Context {
            direction: Direction::Fault,
            ..context.clone()
        };
        (fault_plan, std::borrow::Cow::Owned(context))
    } else {
        (plan, std::borrow::Cow::Borrowed(context))
    };
    if let Some(parts) = &parts
        && parts.status != StatusCode::OK
    {
        context
            .to_mut()
            .properties
            .insert(ReplyStatus(parts.status.as_u16()));
    }
    let answer = |envelope: &Envelope| match &parts {
        Some(parts) => Response::from_parts(parts.clone(), Full::new(envelope.as_bytes().clone())),
        None => envelope_response(envelope),
    };
    if plan.is_empty() {
        return Ok(answer(&envelope));
    }
    match run(plan, Message::new(envelope, context.into_owned()), limits).await {
        Outcome::Continue(message) => Ok(answer(message.envelope())),
        Outcome::Respond(envelope) => Ok(envelope_response(&envelope)),
        Outcome::Fault(fault) => Err(fault),
    }
}

/// Runs the fault flow on a fault lather raised itself. The fault keeps its status and
/// headers (e.g. `Retry-After`); if a fault-flow handler fails in turn, the original fault
/// goes out and the failure is logged — a fault never raises another.
pub(crate) async fn fault(
    plan: &Plan,
    response: HttpResponse,
    context: &Context,
    limits: &Limits,
) -> HttpResponse {
    let (parts, bytes) = collect(response).await;
    let Ok(envelope) = Envelope::parse(bytes.clone(), limits) else {
        return Response::from_parts(parts, Full::new(bytes));
    };
    let body = match run(plan, Message::new(envelope, context.clone()), limits).await {
        Outcome::Continue(message) => message.into_envelope().as_bytes().clone(),
        Outcome::Respond(envelope) => envelope.as_bytes().clone(),
        Outcome::Fault(failure) => {
            tracing::warn!(service = %context.service, %failure, "fault flow failed; the original fault is sent");
            bytes
        }
    };
    Response::from_parts(parts, Full::new(body))
}

async fn collect(response: HttpResponse) -> (http::response::Parts, Bytes) {
    let (parts, body) = response.into_parts();
    let bytes = match body.collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(never) => match never {},
    };
    (parts, bytes)
}

fn envelope_response(envelope: &Envelope) -> HttpResponse {
    let status = if envelope.is_fault() {
        StatusCode::INTERNAL_SERVER_ERROR
    } else {
        StatusCode::OK
    };
    respond::soap(status, envelope.version(), envelope.as_bytes().clone())
}

/// A 128-bit message id: the process's start time in nanoseconds (high half) and a counter
/// (low half), so ids are unique within a run and across restarts.
pub(crate) fn next_message_id() -> u128 {
    static START: OnceLock<u64> = OnceLock::new();
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let start = *START.get_or_init(|| {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64)
    });
    (u128::from(start) << 64) | u128::from(COUNTER.fetch_add(1, Ordering::Relaxed))
}
