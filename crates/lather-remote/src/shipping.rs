//! Partial shipping: the request frame holds only what the handler reads, and the worker
//! rebuilds a message from it.

use crate::frame::{CallRequest, Payload};
use bytes::{Bytes, BytesMut};
use lather_envelope::{Envelope, EnvelopeBuilder, Fault, FaultKind, Limits};
use lather_pipeline::{Access, Context, Message};

/// The request frame for handler `name` with `access` on `message`.
///
/// Shipped: every header block the handler reads, standing alone with the namespace
/// declarations in scope ([`Envelope::extract_header`]); the Body's content as it stands,
/// with the declarations in scope for it, when the handler reads the Body; the whole
/// envelope when it reads every header and the Body. The trace context is a W3C
/// `traceparent` whose trace id is the message id ([`crate::traceparent`]); a remote
/// handler with an exported span replaces it with the span's context.
pub fn request_for(
    name: &str,
    access: &Access,
    message: &Message,
    attempt: u32,
    deadline_unix_ms: u64,
) -> CallRequest {
    let envelope = message.envelope();
    let reads = &access.reads;
    let whole = reads.has_body() && reads.has_all_headers();
    let (payload, namespaces) = if whole {
        (Payload::Whole(envelope.as_bytes().clone()), Vec::new())
    } else {
        let headers = envelope
            .headers()
            .iter()
            .filter(|b| reads.has_header(b.name()))
            .map(|b| envelope.extract_header(b))
            .collect();
        if reads.has_body() {
            let body = Some(envelope.body());
            (Payload::Parts { headers, body }, envelope.body_namespaces())
        } else {
            (
                Payload::Parts {
                    headers,
                    body: None,
                },
                Vec::new(),
            )
        }
    };
    let context = message.context();
    CallRequest {
        id: context.id,
        handler: name.to_owned(),
        attempt,
        deadline_unix_ms,
        heartbeat_ms: 0,
        trace: Some(crate::traceparent(context.id, name, attempt)),
        service: context.service.clone(),
        action: context.action.clone(),
        client: context.client.map(lather_pipeline::ip_text),
        direction: context.direction,
        soap: envelope.version(),
        namespaces,
        payload,
    }
}

/// The message a worker hands its handler: an envelope of the request's SOAP version
/// holding the shipped header blocks and Body content (or the whole envelope shipped), and
/// the request's properties as its context. Parts the handler does not read are absent.
/// Parts that do not make an envelope within `limits` are a `HandlerFailed` fault.
pub fn rebuild_message(request: &CallRequest, limits: &Limits) -> Result<Message, Fault> {
    let bytes = match &request.payload {
        Payload::Whole(bytes) => bytes.clone(),
        Payload::Parts { headers, body } => synthetic_envelope(request, headers, body.as_ref()),
    };
    let envelope = Envelope::parse(bytes, limits).map_err(|f| {
        Fault::with_reason(
            FaultKind::HandlerFailed,
            format!(
                "the parts shipped for handler {} do not make an envelope: {}",
                request.handler,
                f.reason()
            ),
        )
    })?;
    let context = Context {
        id: request.id,
        service: request.service.clone(),
        action: request.action.clone(),
        // Sent as text; one that is not an IP address (another sender's) is dropped.
        client: request.client.as_deref().and_then(|c| c.parse().ok()),
        direction: request.direction,
        request: None,
        properties: Default::default(),
    };
    Ok(Message::new(envelope, context))
}

/// The envelope a worker rebuilds from shipped parts. When the Body was shipped, every
/// namespace in scope for it is declared on the Envelope, in the order shipped, with the
/// prefix the message used for the SOAP namespace: the Body's content then has the same
/// declarations in scope, in the same order, as in the original message, so
/// `extract_payload`/`extract_body` give the same bytes on both sides.
fn synthetic_envelope(request: &CallRequest, headers: &[Bytes], body: Option<&Bytes>) -> Bytes {
    let soap_ns = request.soap.namespace();
    let soap_prefix = request
        .namespaces
        .iter()
        .filter(|(_, uri)| uri == soap_ns)
        .map(|(prefix, _)| prefix.as_str())
        .max_by_key(|prefix| !prefix.is_empty());
    let Some(prefix) = soap_prefix else {
        let mut builder = EnvelopeBuilder::new(request.soap)
            .body_namespaces(request.namespaces.clone())
            .body(body.cloned().unwrap_or_default());
        for block in headers {
            builder = builder.header(block.clone());
        }
        return builder.build();
    };
    let size = headers.iter().map(Bytes::len).sum::<usize>() + body.map_or(0, Bytes::len);
    let mut out = BytesMut::with_capacity(size + 256);
    // `<{prefix}:{local}` (no colon for the default namespace), then `close`.
    let tag = |out: &mut BytesMut, open: &[u8], local: &str, close: &[u8]| {
        out.extend_from_slice(open);
        if !prefix.is_empty() {
            out.extend_from_slice(prefix.as_bytes());
            out.extend_from_slice(b":");
        }
        out.extend_from_slice(local.as_bytes());
        out.extend_from_slice(close);
    };
    tag(&mut out, b"<", "Envelope", b"");
    for (p, uri) in &request.namespaces {
        out.extend_from_slice(b" xmlns");
        if !p.is_empty() {
            out.extend_from_slice(b":");
            out.extend_from_slice(p.as_bytes());
        }
        out.extend_from_slice(b"=\"");
        out.extend_from_slice(uri.as_bytes());
        out.extend_from_slice(b"\"");
    }
    out.extend_from_slice(b">");
    if !headers.is_empty() {
        tag(&mut out, b"<", "Header", b">");
        for block in headers {
            out.extend_from_slice(block);
        }
        tag(&mut out, b"</", "Header", b">");
    }
    tag(&mut out, b"<", "Body", b">");
    if let Some(body) = body {
        out.extend_from_slice(body);
    }
    tag(&mut out, b"</", "Body", b">");
    tag(&mut out, b"</", "Envelope", b">");
    out.freeze()
}
