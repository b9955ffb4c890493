//! Building HTTP responses: SOAP messages, faults, plain text.

use bytes::Bytes;
use http::header::{CONTENT_TYPE, HeaderValue};
use http::{Response, StatusCode};
use http_body_util::Full;
use lather_envelope::{Fault, FaultKind, SoapVersion};

/// The response type of every lather endpoint.
pub(crate) type HttpResponse = Response<Full<Bytes>>;

/// The head and the body of `response`, whose `Full` body is ready at once (empty if it
/// were not).
pub(crate) fn into_parts(response: HttpResponse) -> (http::response::Parts, Bytes) {
    use futures_util::FutureExt;
    use http_body_util::BodyExt;
    let (parts, body) = response.into_parts();
    let bytes = body
        .collect()
        .now_or_never()
        .and_then(Result::ok)
        .map(|c| c.to_bytes())
        .unwrap_or_default();
    (parts, bytes)
}

/// A SOAP message with the content type of `version`.
pub(crate) fn soap(status: StatusCode, version: SoapVersion, body: Bytes) -> HttpResponse {
    // Made at compile time: a value from a `&str` is checked byte by byte each time.
    const SOAP_11: HeaderValue = HeaderValue::from_static(SoapVersion::V11.content_type());
    const SOAP_12: HeaderValue = HeaderValue::from_static(SoapVersion::V12.content_type());
    let content_type = match version {
        SoapVersion::V11 => SOAP_11,
        SoapVersion::V12 => SOAP_12,
    };
    with_value(status, content_type, body)
}

/// Marks a response that carries a fault lather raised, with its kind (for the access log).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Faulted(pub(crate) FaultKind);

/// A fault in `version`, with its catalogue status (and `Retry-After` when busy), marked
/// [`Faulted`].
pub(crate) fn fault(fault: &Fault, version: SoapVersion) -> HttpResponse {
    let status = StatusCode::from_u16(fault.http_status(version))
        .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = soap(status, version, fault.to_envelope(version));
    response.extensions_mut().insert(Faulted(fault.kind()));
    let headers = response.headers_mut();
    match fault.kind() {
        FaultKind::ServerBusy
        | FaultKind::ShuttingDown
        | FaultKind::UpstreamUnavailable
        | FaultKind::PublishQueueFull
        | FaultKind::ResponseTimeUnattainable
        | FaultKind::OfferStoreUnavailable => {
            headers.insert(http::header::RETRY_AFTER, HeaderValue::from_static("1"));
        }
        FaultKind::MethodNotAllowed => {
            headers.insert(http::header::ALLOW, HeaderValue::from_static("POST, GET"));
        }
        _ => {}
    }
    response
}

/// A body with an explicit content type.
pub(crate) fn with_type(
    status: StatusCode,
    content_type: &'static str,
    body: Bytes,
) -> HttpResponse {
    with_value(status, HeaderValue::from_static(content_type), body)
}

/// A body with the content type `content_type`.
fn with_value(status: StatusCode, content_type: HeaderValue, body: Bytes) -> HttpResponse {
    let mut response = Response::new(Full::new(body));
    *response.status_mut() = status;
    response.headers_mut().insert(CONTENT_TYPE, content_type);
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn soap_answers_carry_their_versions_content_type() {
        for version in [SoapVersion::V11, SoapVersion::V12] {
            let response = soap(StatusCode::OK, version, Bytes::from_static(b"<x/>"));
            assert_eq!(response.headers()[CONTENT_TYPE], version.content_type());
        }
    }
}
