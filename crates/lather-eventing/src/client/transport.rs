//! One SOAP request over HTTP and its answer.

use super::ClientError;
use bytes::Bytes;
use http::header::{CONTENT_TYPE, HeaderValue};
use http::{Method, Request, Uri};
use http_body_util::{BodyExt, Full, Limited};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use lather_envelope::SoapVersion;
use std::time::Duration;

/// Most bytes of an answer read.
pub(crate) const MAX_ANSWER_BYTES: usize = 1024 * 1024;

pub(crate) type HttpClient = Client<HttpConnector, Full<Bytes>>;

/// `url` if it is an `http://` URL with a host.
pub(crate) fn checked_url(url: &str) -> Result<Uri, ClientError> {
    let bad = |why: &str| ClientError::BadUrl {
        url: url.to_owned(),
        why: why.to_owned(),
    };
    let uri: Uri = url.parse().map_err(|_| bad("not a URL"))?;
    if uri.scheme_str() != Some("http") {
        return Err(bad("only http:// URLs are supported"));
    }
    if uri.host().is_none_or(str::is_empty) {
        return Err(bad("the URL names no host"));
    }
    Ok(uri)
}

/// The error and its causes, joined.
fn chain(error: &dyn std::error::Error) -> String {
    let mut out = error.to_string();
    let mut at = error.source();
    while let Some(cause) = at {
        out.push_str(": ");
        out.push_str(&cause.to_string());
        at = cause.source();
    }
    out
}

/// POSTs `envelope` with `action` to `url`; returns the HTTP status and the answer's body.
pub(crate) async fn post(
    client: &HttpClient,
    url: &str,
    soap: SoapVersion,
    action: &str,
    envelope: Bytes,
    timeout: Duration,
) -> Result<(u16, Bytes), ClientError> {
    let uri = checked_url(url)?;
    let action = action.replace('"', "%22");
    let mut request = Request::builder()
        .method(Method::POST)
        .uri(uri)
        .body(Full::new(envelope))
        .map_err(|e| ClientError::BadUrl {
            url: url.to_owned(),
            why: e.to_string(),
        })?;
    let header = |text: String| {
        HeaderValue::from_str(&text).map_err(|_| ClientError::BadUrl {
            url: url.to_owned(),
            why: format!("action {action:?} cannot be sent in an HTTP header"),
        })
    };
    let content_type = match soap {
        SoapVersion::V11 => {
            request
                .headers_mut()
                .insert("soapaction", header(format!("\"{action}\""))?);
            HeaderValue::from_static("text/xml; charset=utf-8")
        }
        SoapVersion::V12 => header(format!(
            "application/soap+xml; charset=utf-8; action=\"{action}\""
        ))?,
    };
    request.headers_mut().insert(CONTENT_TYPE, content_type);
    let exchange = async {
        let response = client.request(request).await.map_err(|e| {
            let cause = chain(&e);
            if e.is_connect() {
                ClientError::Unreachable {
                    url: url.to_owned(),
                    cause,
                }
            } else {
                ClientError::BadAnswer {
                    status: 0,
                    why: cause,
                }
            }
        })?;
        let status = response.status().as_u16();
        let body = Limited::new(response.into_body(), MAX_ANSWER_BYTES)
            .collect()
            .await
            .map_err(|e| ClientError::BadAnswer {
                status,
                why: format!("reading the answer: {e}"),
            })?
            .to_bytes();
        Ok((status, body))
    };
    tokio::time::timeout(timeout, exchange)
        .await
        .map_err(|_| ClientError::Timeout {
            url: url.to_owned(),
            waited_ms: u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
        })?
}
