//! Calling many operations of one service in one request, in lather's batch format
//! ([`lather_envelope::batch`]): each item runs through the service's stages as its own
//! message and is answered on its own, in order.

use crate::{Call, Client, ClientError, SoapResponse};
use lather_envelope::Envelope;
use lather_envelope::batch::{BATCH_NS, item, request_body, results};

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
        let mut items = Vec::with_capacity(calls.len());
        for call in calls {
            if call.version_or(self.default_version) != version {
                return Err(invalid(
                    "the calls of a batch must share one SOAP version".into(),
                ));
            }
            let envelope = Envelope::parse(call.envelope(url, version)?, &self.limits)
                .map_err(|fault| invalid(format!("a call's envelope cannot be read: {fault}")))?;
            items.push(item(&envelope));
        }
        let batch = Call::new(request_body(&items))
            .version(version)
            .action(format!("{BATCH_NS}#Batch"));
        let answer = self.call(url, &batch).await?;
        let malformed = |source| ClientError::Malformed {
            status: 200,
            source,
        };
        let results = results(&answer, &self.limits).map_err(malformed)?;
        if results.len() != calls.len() {
            return Err(malformed(lather_envelope::Fault::with_reason(
                lather_envelope::FaultKind::InvalidEnvelope,
                format!("{} results for {} calls", results.len(), calls.len()),
            )));
        }
        Ok(results
            .into_iter()
            .map(|r| SoapResponse::from_answer(r.status, None, r.envelope, version, &self.limits))
            .collect())
    }
}
