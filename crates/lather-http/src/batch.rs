//! Message batching: one request carrying N operations for one service, answered with N
//! results in order, each item run through the service's stages as a message of its own
//! (one failing does not fail the others).
//!
//! ```xml
//! <s:Body>
//!   <lb:Batch xmlns:lb="urn:lather:batch">
//!     <lb:Item><lb:Header>…header blocks…</lb:Header><m:getQuote>…</m:getQuote></lb:Item>
//!     <lb:Item><m:getQuote>…</m:getQuote></lb:Item>
//!   </lb:Batch>
//! </s:Body>
//! ```
//!
//! is answered (HTTP 200, whatever the items' outcomes) with
//!
//! ```xml
//! <lb:BatchResponse xmlns:lb="urn:lather:batch">
//!   <lb:Result status="200"><lb:Header>…</lb:Header><m:getQuoteResponse>…</lb:Result>
//!   <lb:Result status="500"><s:Fault>…</s:Fault></lb:Result>
//! </lb:BatchResponse>
//! ```

use crate::respond::{self, HttpResponse};
use bytes::{Bytes, BytesMut};
use futures_util::FutureExt;
use http::StatusCode;
use http_body_util::BodyExt;
use lather_envelope::{Element, Envelope, EnvelopeBuilder, Fault, FaultKind, Limits, QName};
use std::future::Future;

/// The batch format's namespace.
pub(crate) const BATCH_NS: &str = "urn:lather:batch";

/// Whether `operation` is a batch.
pub(crate) fn is_batch(operation: &QName) -> bool {
    operation.is(BATCH_NS, "Batch")
}

/// Splits the batch `envelope` into its items, runs each with `each` (all at once), and
/// answers their results in order; a batch that is malformed or longer than `max_items`
/// is refused whole with `InvalidEnvelope`.
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
    let mut body = BytesMut::with_capacity(256 * answers.len());
    body.extend_from_slice(format!(r#"<lb:BatchResponse xmlns:lb="{BATCH_NS}">"#).as_bytes());
    for answer in answers {
        let answer = answer.unwrap_or_else(|fault| respond::fault(&fault, version));
        result(&mut body, answer, limits);
    }
    body.extend_from_slice(b"</lb:BatchResponse>");
    let answer = EnvelopeBuilder::new(version).body(body.freeze()).build();
    Ok(respond::soap(StatusCode::OK, version, answer))
}

/// The items of the batch, each as an envelope of the batch's version; an item that
/// cannot be made one is its fault (the others go on).
fn items(
    envelope: &Envelope,
    limits: &Limits,
    max_items: usize,
) -> Result<Vec<Result<Envelope, Fault>>, Fault> {
    let invalid = |why: String| Fault::with_reason(FaultKind::InvalidEnvelope, why);
    let source = envelope
        .extract_payload()
        .ok_or_else(|| invalid("an empty batch".into()))?;
    let batch = Element::parse(&source, limits)?;
    let children: Vec<&Element> = batch.elements().collect();
    if children.is_empty() {
        return Err(invalid("the batch holds no lb:Item".into()));
    }
    if children.len() > max_items {
        return Err(invalid(format!(
            "the batch holds {} items; at most {max_items} ([server] max_batch_items)",
            children.len()
        )));
    }
    if let Some(other) = children.iter().find(|c| !c.name().is(BATCH_NS, "Item")) {
        return Err(invalid(format!(
            "a batch holds only lb:Item elements, not {{{}}}{}",
            other.name().namespace(),
            other.name().local()
        )));
    }
    let ns = envelope.version().namespace();
    Ok(children
        .into_iter()
        .map(|item| {
            let mut header = BytesMut::new();
            let mut operations = Vec::new();
            for child in item.elements() {
                if child.name().is(BATCH_NS, "Header") {
                    for block in child.elements() {
                        header.extend_from_slice(&standalone(block, &source)?);
                    }
                } else {
                    operations.push(standalone(child, &source)?);
                }
            }
            let [operation] = operations.as_slice() else {
                return Err(invalid(format!(
                    "a batch item holds one operation element, not {}",
                    operations.len()
                )));
            };
            let mut text = BytesMut::with_capacity(header.len() + operation.len() + 160);
            text.extend_from_slice(format!(r#"<s:Envelope xmlns:s="{ns}">"#).as_bytes());
            if !header.is_empty() {
                text.extend_from_slice(b"<s:Header>");
                text.extend_from_slice(&header);
                text.extend_from_slice(b"</s:Header>");
            }
            text.extend_from_slice(b"<s:Body>");
            text.extend_from_slice(operation);
            text.extend_from_slice(b"</s:Body></s:Envelope>");
            Envelope::parse(text.freeze(), limits)
        })
        .collect())
}

fn standalone(element: &Element, source: &[u8]) -> Result<Bytes, Fault> {
    element.standalone(source).ok_or_else(|| {
        Fault::with_reason(FaultKind::InvalidEnvelope, "a batch item could not be read")
    })
}

/// Appends one item's answer as an `lb:Result`: its status, its header blocks and its
/// Body's content (a fault's `Fault` element); an answer that is no envelope (an empty 202)
/// leaves the result empty.
fn result(out: &mut BytesMut, answer: HttpResponse, limits: &Limits) {
    let status = answer.status().as_u16();
    // A `Full` body is ready at once.
    let bytes = answer
        .into_body()
        .collect()
        .now_or_never()
        .and_then(Result::ok)
        .map(|c| c.to_bytes())
        .unwrap_or_default();
    out.extend_from_slice(format!(r#"<lb:Result status="{status}">"#).as_bytes());
    if let Ok(envelope) = Envelope::parse(bytes, limits) {
        if !envelope.headers().is_empty() {
            out.extend_from_slice(b"<lb:Header>");
            for block in envelope.headers() {
                out.extend_from_slice(&envelope.extract_header(block));
            }
            out.extend_from_slice(b"</lb:Header>");
        }
        out.extend_from_slice(&envelope.extract_body());
    }
    out.extend_from_slice(b"</lb:Result>");
}
