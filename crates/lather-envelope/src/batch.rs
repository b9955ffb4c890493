//! lather's batch format (`urn:lather:batch`): N operations for one service in one
//! envelope, answered with N results in order.
//!
//! A request's Body holds one `lb:Batch` of `lb:Item`s; each item holds one operation
//! element, optionally after an `lb:Header` with the item's header blocks. The answer's
//! Body holds one `lb:BatchResponse` of `lb:Result`s, each with the item's HTTP `status`,
//! its answer's header blocks in an `lb:Header`, and its Body's content (a fault's `Fault`).

use crate::{Element, Envelope, Fault, FaultKind, Limits, QName, SoapVersion};
use bytes::{Bytes, BytesMut};

/// The batch format's namespace.
pub const BATCH_NS: &str = "urn:lather:batch";

/// Whether `operation` is a batch request.
pub fn is_batch(operation: &QName) -> bool {
    operation.is(BATCH_NS, "Batch")
}

/// `envelope` as one `lb:Item`: its header blocks and its Body's content, each standing on
/// its own (namespace declarations in scope carried along).
pub fn item(envelope: &Envelope) -> Bytes {
    let mut out = BytesMut::with_capacity(envelope.as_bytes().len() + 64);
    out.extend_from_slice(b"<lb:Item>");
    header_and_body(&mut out, envelope);
    out.extend_from_slice(b"</lb:Item>");
    out.freeze()
}

/// The Body content of a batch request holding `items` (each made by [`item`]).
pub fn request_body<'a>(items: impl IntoIterator<Item = &'a Bytes>) -> Bytes {
    let mut out = BytesMut::new();
    out.extend_from_slice(format!(r#"<lb:Batch xmlns:lb="{BATCH_NS}">"#).as_bytes());
    for item in items {
        out.extend_from_slice(item);
    }
    out.extend_from_slice(b"</lb:Batch>");
    out.freeze()
}

/// The items of the batch request `envelope`, each as an envelope of its version; an item
/// that cannot be made one is its fault (the others stand). A batch with no item, with
/// other elements than `lb:Item`, or with more than `max_items` is refused whole.
pub fn items(
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
    let version = envelope.version();
    Ok(children
        .into_iter()
        .map(|item| {
            let (header, content) = split(item, &source)?;
            let operations = item
                .elements()
                .filter(|c| !c.name().is(BATCH_NS, "Header"))
                .count();
            if operations != 1 {
                return Err(invalid(format!(
                    "a batch item holds one operation element, not {operations}"
                )));
            }
            Envelope::parse(rebuild(version, &header, &content), limits)
        })
        .collect())
}

/// Appends one item's answer as an `lb:Result` with its HTTP `status`; `answer` is `None`
/// (an empty result) when the answer is no envelope (an empty 202).
pub fn write_result(out: &mut BytesMut, status: u16, answer: Option<&Envelope>) {
    out.extend_from_slice(format!(r#"<lb:Result status="{status}">"#).as_bytes());
    if let Some(envelope) = answer {
        header_and_body(out, envelope);
    }
    out.extend_from_slice(b"</lb:Result>");
}

/// The Body content of a batch answer holding `results` (each written by [`write_result`]).
pub fn response_body(results: &[u8]) -> Bytes {
    let mut out = BytesMut::with_capacity(results.len() + 64);
    out.extend_from_slice(format!(r#"<lb:BatchResponse xmlns:lb="{BATCH_NS}">"#).as_bytes());
    out.extend_from_slice(results);
    out.extend_from_slice(b"</lb:BatchResponse>");
    out.freeze()
}

/// One result of a batch answer: the item's HTTP status and its answer rebuilt as an
/// envelope of the batch's version (empty for an empty result).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchResult {
    /// The item's HTTP status.
    pub status: u16,
    /// The item's answer envelope, or nothing.
    pub envelope: Bytes,
}

/// The results of the batch answer `answer`, in order; `InvalidEnvelope` when it is not
/// one.
pub fn results(answer: &Envelope, limits: &Limits) -> Result<Vec<BatchResult>, Fault> {
    let invalid = |why: String| {
        Fault::with_reason(
            FaultKind::InvalidEnvelope,
            format!("not a batch answer: {why}"),
        )
    };
    let source = answer
        .extract_payload()
        .ok_or_else(|| invalid("an empty Body".into()))?;
    let response = Element::parse(&source, limits)?;
    if !response.name().is(BATCH_NS, "BatchResponse") {
        return Err(invalid(format!(
            "{{{}}}{} is not lb:BatchResponse",
            response.name().namespace(),
            response.name().local()
        )));
    }
    response
        .elements()
        .map(|result| {
            let status = result
                .attribute(&QName::new("", "status"))
                .and_then(|s| s.parse::<u16>().ok())
                .ok_or_else(|| invalid("a result without a status".into()))?;
            let (header, content) = split(result, &source)?;
            let envelope = if header.is_empty() && content.is_empty() {
                Bytes::new()
            } else {
                rebuild(answer.version(), &header, &content)
            };
            Ok(BatchResult { status, envelope })
        })
        .collect()
}

/// An item's or result's header blocks (from its `lb:Header`) and other elements, each
/// standing on its own.
fn split(element: &Element, source: &[u8]) -> Result<(BytesMut, BytesMut), Fault> {
    let standalone = |e: &Element| {
        e.standalone(source).ok_or_else(|| {
            Fault::with_reason(
                FaultKind::InvalidEnvelope,
                "a batch entry could not be read",
            )
        })
    };
    let mut header = BytesMut::new();
    let mut content = BytesMut::new();
    for child in element.elements() {
        if child.name().is(BATCH_NS, "Header") {
            for block in child.elements() {
                header.extend_from_slice(&standalone(block)?);
            }
        } else {
            content.extend_from_slice(&standalone(child)?);
        }
    }
    Ok((header, content))
}

/// An envelope of `version` with `header` blocks and `content` in its Body.
fn rebuild(version: SoapVersion, header: &[u8], content: &[u8]) -> Bytes {
    let ns = version.namespace();
    let mut text = BytesMut::with_capacity(header.len() + content.len() + 160);
    text.extend_from_slice(format!(r#"<s:Envelope xmlns:s="{ns}">"#).as_bytes());
    if !header.is_empty() {
        text.extend_from_slice(b"<s:Header>");
        text.extend_from_slice(header);
        text.extend_from_slice(b"</s:Header>");
    }
    text.extend_from_slice(b"<s:Body>");
    text.extend_from_slice(content);
    text.extend_from_slice(b"</s:Body></s:Envelope>");
    text.freeze()
}

/// `envelope`'s header blocks in an `lb:Header` (if any) and its Body's content.
fn header_and_body(out: &mut BytesMut, envelope: &Envelope) {
    if !envelope.headers().is_empty() {
        out.extend_from_slice(b"<lb:Header>");
        for block in envelope.headers() {
            out.extend_from_slice(&envelope.extract_header(block));
        }
        out.extend_from_slice(b"</lb:Header>");
    }
    out.extend_from_slice(&envelope.extract_body());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Envelope {
        Envelope::parse(Bytes::from(text.to_owned()), &Limits::default()).unwrap()
    }

    #[test]
    fn items_and_results_go_through_the_format_and_back() {
        let call = parse(
            r#"<s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope" xmlns:m="urn:m"><s:Header><m:trace>7</m:trace></s:Header><s:Body><m:get><id>1</id></m:get></s:Body></s:Envelope>"#,
        );
        let both = [item(&call), item(&call)];
        let batch = crate::EnvelopeBuilder::new(SoapVersion::V12)
            .body(request_body(&both))
            .build();
        let batch = Envelope::parse(batch, &Limits::default()).unwrap();
        assert!(batch.operation().is_some_and(is_batch));
        let split = items_of(&batch, 10);
        assert_eq!(split.len(), 2);
        let first = split[0].as_ref().unwrap();
        assert_eq!(first.operation(), Some(&QName::new("urn:m", "get")));
        assert_eq!(first.headers().len(), 1);
        let mut out = BytesMut::new();
        write_result(&mut out, 200, Some(first));
        write_result(&mut out, 202, None);
        let answer = crate::EnvelopeBuilder::new(SoapVersion::V12)
            .body(response_body(&out))
            .build();
        let answer = Envelope::parse(answer, &Limits::default()).unwrap();
        let got = results(&answer, &Limits::default()).unwrap();
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].status, 200);
        let back = Envelope::parse(got[0].envelope.clone(), &Limits::default()).unwrap();
        assert_eq!(back.operation(), Some(&QName::new("urn:m", "get")));
        assert_eq!((got[1].status, got[1].envelope.len()), (202, 0));
        assert!(items(&batch, &Limits::default(), 1).is_err());
        assert!(results(&call, &Limits::default()).is_err());
    }

    fn items_of(batch: &Envelope, max: usize) -> Vec<Result<Envelope, Fault>> {
        items(batch, &Limits::default(), max).unwrap()
    }
}
