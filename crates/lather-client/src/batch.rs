//! Calling many operations of one service in one request, in lather's batch format
//! (`urn:lather:batch`): each item runs through the service's stages as its own message
//! and is answered on its own, in order.

use crate::{Call, Client, ClientError, SoapResponse};
use bytes::{Bytes, BytesMut};
use lather_envelope::{Element, Envelope, Fault, FaultKind, QName, SoapVersion};

/// The batch format's namespace.
pub const BATCH_NS: &str = "urn:lather:batch";

impl Client {
    /// Sends `calls` to `url` as one batch request and returns each call's answer in
    /// order: a fault or an error status of one item is that item's error, the others
    /// stand. The calls must share one SOAP version; each keeps its own header blocks
    /// (WS-Addressing ones included). The service must be lather's, or speak the batch
    /// format.
    ///
    /// The outer `Err` is for the batch as a whole: it could not be sent, or its answer is
    /// not a batch answer with one result per call.
    pub async fn batch(
        &self,
        url: &str,
        calls: &[Call],
    ) -> Result<Vec<Result<SoapResponse, ClientError>>, ClientError> {
        let invalid = |reason: String| ClientError::InvalidRequest { reason };
        let Some(first) = calls.first() else {
            return Err(invalid("a batch needs at least one call".into()));
        };
        let version = first.version_or(self.default_version);
        let mut body = BytesMut::new();
        body.extend_from_slice(format!(r#"<lb:Batch xmlns:lb="{BATCH_NS}">"#).as_bytes());
        for call in calls {
            if call.version_or(self.default_version) != version {
                return Err(invalid(
                    "the calls of a batch must share one SOAP version".into(),
                ));
            }
            let envelope = Envelope::parse(call.envelope(url, version)?, &self.limits)
                .map_err(|fault| invalid(format!("a call's envelope cannot be read: {fault}")))?;
            body.extend_from_slice(b"<lb:Item>");
            if !envelope.headers().is_empty() {
                body.extend_from_slice(b"<lb:Header>");
                for block in envelope.headers() {
                    body.extend_from_slice(&envelope.extract_header(block));
                }
                body.extend_from_slice(b"</lb:Header>");
            }
            body.extend_from_slice(&envelope.extract_body());
            body.extend_from_slice(b"</lb:Item>");
        }
        body.extend_from_slice(b"</lb:Batch>");
        let batch = Call::new(body.freeze())
            .version(version)
            .action(format!("{BATCH_NS}#Batch"));
        let answer = self.call(url, &batch).await?;
        let results = self.results(&answer, version)?;
        if results.len() != calls.len() {
            return Err(malformed(format!(
                "{} results for {} calls",
                results.len(),
                calls.len()
            )));
        }
        Ok(results)
    }

    /// The `lb:Result`s of a batch answer, each read as the answer to its call.
    fn results(
        &self,
        answer: &Envelope,
        version: SoapVersion,
    ) -> Result<Vec<Result<SoapResponse, ClientError>>, ClientError> {
        let source = answer
            .extract_payload()
            .ok_or_else(|| malformed("an empty Body".into()))?;
        let response =
            Element::parse(&source, &self.limits).map_err(|f| malformed(f.to_string()))?;
        if !response.name().is(BATCH_NS, "BatchResponse") {
            return Err(malformed(format!(
                "{{{}}}{} is not lb:BatchResponse",
                response.name().namespace(),
                response.name().local()
            )));
        }
        let ns = version.namespace();
        response
            .elements()
            .map(|result| {
                let status = result
                    .attribute(&QName::new("", "status"))
                    .and_then(|s| s.parse::<u16>().ok())
                    .ok_or_else(|| malformed("a result without a status".into()))?;
                let mut header = BytesMut::new();
                let mut content = BytesMut::new();
                for child in result.elements() {
                    let target = if child.name().is(BATCH_NS, "Header") {
                        for block in child.elements() {
                            header.extend_from_slice(&standalone(block, &source)?);
                        }
                        continue;
                    } else {
                        &mut content
                    };
                    target.extend_from_slice(&standalone(child, &source)?);
                }
                let body = if content.is_empty() && header.is_empty() {
                    Bytes::new()
                } else {
                    let mut text = BytesMut::with_capacity(content.len() + header.len() + 128);
                    text.extend_from_slice(format!(r#"<s:Envelope xmlns:s="{ns}">"#).as_bytes());
                    if !header.is_empty() {
                        text.extend_from_slice(b"<s:Header>");
                        text.extend_from_slice(&header);
                        text.extend_from_slice(b"</s:Header>");
                    }
                    text.extend_from_slice(b"<s:Body>");
                    text.extend_from_slice(&content);
                    text.extend_from_slice(b"</s:Body></s:Envelope>");
                    text.freeze()
                };
                Ok(SoapResponse::from_answer(
                    status,
                    None,
                    body,
                    version,
                    &self.limits,
                ))
            })
            .collect()
    }
}

fn standalone(element: &Element, source: &[u8]) -> Result<Bytes, ClientError> {
    element
        .standalone(source)
        .ok_or_else(|| malformed("a result could not be read".into()))
}

/// A 200 answer that is not the batch answer it should be.
fn malformed(why: String) -> ClientError {
    ClientError::Malformed {
        status: 200,
        source: Fault::with_reason(
            FaultKind::InvalidEnvelope,
            format!("not a batch answer: {why}"),
        ),
    }
}
