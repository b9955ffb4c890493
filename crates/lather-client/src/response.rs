//! Reading an answer: an envelope, nothing (one-way), a fault, or an error.

use crate::error::ClientError;
use crate::error::STATUS_BODY_BYTES;
use crate::transport::Received;
use lather_envelope::{Envelope, Limits, ReceivedFault, SoapVersion};

/// A successful answer to [`Client::send`](crate::Client::send): its HTTP status and its
/// envelope, if it had one (a one-way operation answers `202 Accepted` with no body).
/// Faults never come here: they are [`ClientError::Fault`].
#[derive(Debug, Clone)]
pub struct SoapResponse {
    status: u16,
    envelope: Option<Envelope>,
}

impl SoapResponse {
    /// The HTTP status (2xx).
    pub fn status(&self) -> u16 {
        self.status
    }

    /// The answer's envelope; `None` for an empty answer.
    pub fn envelope(&self) -> Option<&Envelope> {
        self.envelope.as_ref()
    }

    /// The answer's envelope, taken; `None` for an empty answer.
    pub fn into_envelope(self) -> Option<Envelope> {
        self.envelope
    }

    /// Reads an answer that came another way than this crate's HTTP transport (a message
    /// stream), by the same rules as [`Client::send`](crate::Client::send): a fault is
    /// [`ClientError::Fault`], an error status without an envelope
    /// [`ClientError::Status`], and so on.
    pub fn from_answer(
        status: u16,
        content_type: Option<String>,
        body: bytes::Bytes,
        sent: SoapVersion,
        limits: &Limits,
    ) -> Result<SoapResponse, ClientError> {
        read(
            Received {
                status,
                content_type,
                body,
            },
            sent,
            limits,
        )
    }
}

/// Reads `received`, the answer to a SOAP `sent` request, parsing it within `limits`:
/// - an empty 2xx answer is a response without an envelope;
/// - a Fault (any status, either version: a SOAP 1.1 node answers a 1.2 request with a 1.1
///   VersionMismatch fault) is [`ClientError::Fault`];
/// - an error status without a readable envelope is [`ClientError::Status`];
/// - a 2xx answer that is not a readable envelope is [`ClientError::Malformed`];
/// - a non-fault envelope of the other version is [`ClientError::VersionMismatch`].
pub(crate) fn read(
    received: Received,
    sent: SoapVersion,
    limits: &Limits,
) -> Result<SoapResponse, ClientError> {
    let Received {
        status,
        content_type,
        body,
    } = received;
    let success = (200..300).contains(&status);
    let status_error = |body: &bytes::Bytes| ClientError::Status {
        status,
        content_type: content_type.clone(),
        body: body.slice(..body.len().min(STATUS_BODY_BYTES)),
    };
    if body.iter().all(u8::is_ascii_whitespace) {
        return if success {
            Ok(SoapResponse {
                status,
                envelope: None,
            })
        } else {
            Err(status_error(&body))
        };
    }
    let envelope = match Envelope::parse(body.clone(), limits) {
        Ok(envelope) => envelope,
        Err(_) if !success => return Err(status_error(&body)),
        Err(source) => return Err(ClientError::Malformed { status, source }),
    };
    if let Some(fault) = ReceivedFault::from_envelope(&envelope, limits)
        .map_err(|source| ClientError::Malformed { status, source })?
    {
        return Err(ClientError::Fault {
            status,
            fault: Box::new(fault),
        });
    }
    if !success {
        return Err(status_error(&body));
    }
    if envelope.version() != sent {
        return Err(ClientError::VersionMismatch {
            status,
            sent,
            received: envelope.version(),
        });
    }
    Ok(SoapResponse {
        status,
        envelope: Some(envelope),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use lather_envelope::{Fault, FaultKind};

    fn received(status: u16, body: &'static str) -> Received {
        Received {
            status,
            content_type: Some("text/plain".into()),
            body: Bytes::from_static(body.as_bytes()),
        }
    }

    const OK12: &str = r#"<e:Envelope xmlns:e="http://www.w3.org/2003/05/soap-envelope"><e:Body><m:r xmlns:m="urn:m"/></e:Body></e:Envelope>"#;

    #[test]
    fn empty_2xx_is_no_envelope_and_an_envelope_is_returned() {
        let limits = Limits::default();
        let none = read(received(202, ""), SoapVersion::V12, &limits).unwrap();
        assert_eq!(none.status(), 202);
        assert!(none.envelope().is_none());
        let some = read(received(200, OK12), SoapVersion::V12, &limits).unwrap();
        assert!(some.into_envelope().is_some());
    }

    #[test]
    fn statuses_garbage_versions_and_faults_are_told_apart() {
        let limits = Limits::default();
        let err = read(received(404, "no such page"), SoapVersion::V12, &limits).unwrap_err();
        assert!(
            matches!(&err, ClientError::Status { status: 404, body, .. } if &body[..] == b"no such page"),
            "{err:?}"
        );
        let err = read(received(503, ""), SoapVersion::V12, &limits).unwrap_err();
        assert_eq!(err.status(), Some(503));
        let err = read(received(200, "<html/>"), SoapVersion::V12, &limits).unwrap_err();
        assert!(
            matches!(err, ClientError::Malformed { status: 200, .. }),
            "{err:?}"
        );
        let err = read(received(200, OK12), SoapVersion::V11, &limits).unwrap_err();
        assert!(
            matches!(
                err,
                ClientError::VersionMismatch {
                    sent: SoapVersion::V11,
                    received: SoapVersion::V12,
                    ..
                }
            ),
            "{err:?}"
        );
        let fault = Fault::new(FaultKind::VersionMismatch).to_envelope(SoapVersion::V11);
        let answer = Received {
            status: 500,
            content_type: None,
            body: fault,
        };
        let err = read(answer, SoapVersion::V12, &limits).unwrap_err();
        assert!(err.is_fault(), "{err:?}");
        assert_eq!(err.fault().unwrap().code().local(), "VersionMismatch");
    }
}
