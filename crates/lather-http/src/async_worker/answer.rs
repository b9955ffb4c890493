//! Making a kept request's answer through the service, and reading it.

use crate::async_reply::job::{Answer, Job};
use crate::dispatch;
use crate::service::Service;
use crate::state::State;
use crate::timing::Timeline;
use bytes::Bytes;
use lather_envelope::{Edit, Envelope, EnvelopeBuilder, Limits, QName};
use lather_pipeline::Context;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// The service's answer to the job's request, with `RelatesTo` (and `To`) added when the
/// stages did not write them; `None` when the kept request cannot be read any more.
pub(super) async fn make(state: &State, service: &Service, job: &Job) -> Option<Answer> {
    let version = job.version();
    let envelope = match Envelope::parse(Bytes::from(job.request.clone()), &state.limits) {
        Ok(envelope) => envelope,
        Err(fault) => {
            tracing::warn!(id = %job.id, %fault, "a kept asynchronous request cannot be read");
            return None;
        }
    };
    let mut request = http::Request::builder()
        .method(http::Method::POST)
        .uri(service.path.as_str())
        .body(())
        .ok()?;
    // The action was an HTTP header value when the request came.
    *request.headers_mut() = lather_client::soap_headers(version, job.action.as_deref()).ok()?;
    let parts = request.into_parts().0;
    let mut context = Context {
        id: crate::flows::next_message_id(),
        service: service.name.clone(),
        action: job.action.clone(),
        ..Context::default()
    };
    let mut untimed = Timeline::disabled(Instant::now());
    let answered = Box::pin(dispatch::handle_envelope(
        state,
        service,
        &parts,
        envelope,
        &mut context,
        &mut untimed,
    ))
    .await
    .unwrap_or_else(|fault| crate::respond::fault(&fault, version));
    let (head, body) = crate::respond::into_parts(answered);
    let body = related(body, job, &state.limits);
    Some(Answer {
        status: head.status.as_u16(),
        body: String::from_utf8_lossy(&body).into_owned(),
    })
}

/// `body` with the job's `RelatesTo` and `To` in its WS-Addressing namespace, when it is
/// an envelope without them.
fn related(body: Bytes, job: &Job, limits: &Limits) -> Bytes {
    let Ok(envelope) = Envelope::parse(body.clone(), limits) else {
        return body;
    };
    let ns = job.wsa_ns.as_str();
    let mut edits = Vec::new();
    for (local, text) in [
        ("RelatesTo", job.id.as_str()),
        ("To", job.reply_to.as_str()),
    ] {
        if envelope.header(&QName::new(ns, local)).is_none()
            && let Ok(edit) =
                Edit::add_header(EnvelopeBuilder::text_element(ns, "wsa", local, text))
        {
            edits.push(edit);
        }
    }
    envelope.write(&edits).unwrap_or(body)
}

pub(super) fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The `Action` header of `answer` (in the job's WS-Addressing namespace), for the POST's
/// SOAP action.
pub(super) fn action_of(answer: &Answer, job: &Job, limits: &Limits) -> Option<String> {
    let envelope = Envelope::parse(Bytes::from(answer.body.clone()), limits).ok()?;
    let block = envelope.header(&QName::new(job.wsa_ns.as_str(), "Action"))?;
    envelope.header_text(block)
}
