//! Message batching: one request carrying N operations for one service
//! ([`lather_envelope::batch`]), answered with N results in order, each item run through
//! the service's stages as a message of its own (one failing does not fail the others).

use crate::respond::{self, HttpResponse};
use bytes::BytesMut;
use http::StatusCode;
use lather_envelope::batch::{items, response_body, write_result};
use lather_envelope::{Envelope, EnvelopeBuilder, Fault, Limits};
use std::future::Future;

/// Splits the batch `envelope` into its items, runs each with `each` (all at once), and
/// answers their results in order (HTTP 200); a batch that is malformed or longer than
/// `max_items` is refused whole with `InvalidEnvelope`.
pub(crate) async fn run<F, Fut>(
    envelope: &Envelope,
    limits: &Limits,
    max_items: usize,
    each: F,
) -> Result<HttpResponse, Fault>
where
    F: Fn(Envelope) -> Fut,
    Fut: Future<Output = Result<HttpResponse, Fault>>,
{
    let items = items(envelope, limits, max_items)?;
    let answers = futures_util::future::join_all(items.into_iter().map(|item| async {
        match item {
            Ok(item) => each(item).await,
            Err(fault) => Err(fault),
        }
    }))
    .await;
    let version = envelope.version();
    let mut results = BytesMut::with_capacity(256 * answers.len());
    for answer in answers {
        let answer = answer.unwrap_or_else(|fault| respond::fault(&fault, version));
        let (head, bytes) = respond::into_parts(answer);
        let parsed = Envelope::parse(bytes, limits).ok();
        write_result(&mut results, head.status.as_u16(), parsed.as_ref());
    }
    let answer = EnvelopeBuilder::new(version)
        .body(response_body(&results))
        .build();
    Ok(respond::soap(StatusCode::OK, version, answer))
}
