//! One SOAP request over HTTP and its answer, through [`lather_client::Client`]; its errors
//! told as the eventing client's.

use super::EventingClientError;
use bytes::Bytes;
use http::Uri;
use lather_envelope::{
    Envelope, QName, SOAP11_NS, SOAP12_NS, SoapVersion, WSA04_NS, WSA10_NS, WSE04_NS, WSE11_NS,
};
use std::time::Duration;

/// Most bytes of an answer read.
pub(crate) const MAX_ANSWER_BYTES: usize = 1024 * 1024;

/// A SOAP client waiting at most `timeout` for each answer, reading at most
/// [`MAX_ANSWER_BYTES`].
pub(crate) fn soap_client(timeout: Duration) -> lather_client::Client {
    lather_client::Client::builder()
        .request_timeout(timeout)
        .connect_timeout(timeout)
        .max_response_bytes(MAX_ANSWER_BYTES)
        .build()
        .expect("the default user agent is a valid header value")
}

/// `url` if it is an `http://` URL with a host.
pub(crate) fn checked_url(url: &str) -> Result<Uri, EventingClientError> {
    let bad = |why: &str| EventingClientError::BadUrl {
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

/// The error's causes, joined (the first is the error itself).
fn causes(error: &dyn std::error::Error) -> String {
    let mut out = String::new();
    let mut at = error.source();
    while let Some(cause) = at {
        let text = cause.to_string();
        if !out.ends_with(&text) {
            if !out.is_empty() {
                out.push_str(": ");
            }
            out.push_str(&text);
        }
        at = cause.source();
    }
    out
}

/// POSTs `envelope` with `action` to `url`; returns the HTTP status and the answer's
/// envelope (`None` for an empty 2xx answer). A fault answer is [`EventingClientError::Fault`].
pub(crate) async fn post(
    client: &lather_client::Client,
    url: &str,
    soap: SoapVersion,
    action: &str,
    envelope: Bytes,
) -> Result<(u16, Option<Envelope>), EventingClientError> {
    checked_url(url)?;
    let answer = client.send_bytes(url, soap, Some(action), envelope).await;
    match answer {
        Ok(response) => Ok((response.status(), response.into_envelope())),
        Err(e) => Err(told(url, e)),
    }
}

/// A `lather_client` error as the eventing client's.
fn told(url: &str, error: lather_client::ClientError) -> EventingClientError {
    use lather_client::ClientError as E;
    let status = error.status().unwrap_or(0);
    match error {
        E::InvalidUrl { url, reason } => EventingClientError::BadUrl {
            url,
            why: reason.to_owned(),
        },
        E::InvalidRequest { reason } => EventingClientError::BadUrl {
            url: url.to_owned(),
            why: reason,
        },
        E::Connect { url, source } => EventingClientError::Unreachable {
            cause: {
                let deeper = causes(source.as_ref());
                if deeper.is_empty() {
                    source.to_string()
                } else {
                    format!("{source}: {deeper}")
                }
            },
            url,
        },
        E::Timeout { url, after } => EventingClientError::Timeout {
            url,
            waited_ms: u64::try_from(after.as_millis()).unwrap_or(u64::MAX),
        },
        E::Fault { status, fault } => EventingClientError::Fault {
            status,
            code: short(fault.code()),
            subcode: fault.subcodes().last().map(short),
            reason: fault.reason().to_owned(),
        },
        E::Malformed { status, source } => EventingClientError::BadAnswer {
            status,
            why: format!("not a SOAP envelope: {}", source.reason()),
        },
        other => EventingClientError::BadAnswer {
            status,
            why: other.to_string(),
        },
    }
}

/// A fault code as people read it: SOAP's own codes by their local name (`Sender`,
/// `Client`), eventing and addressing codes with their usual prefix
/// (`wse:InvalidExpirationTime`, `wsa:ActionNotSupported`), others in Clark notation.
fn short(code: &QName) -> String {
    match code.namespace() {
        SOAP11_NS | SOAP12_NS | "" => code.local().to_owned(),
        WSE04_NS | WSE11_NS => format!("wse:{}", code.local()),
        WSA04_NS | WSA10_NS => format!("wsa:{}", code.local()),
        _ => code.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_read_as_people_write_them() {
        assert_eq!(short(&QName::new(SOAP12_NS, "Sender")), "Sender");
        assert_eq!(short(&QName::new(SOAP11_NS, "Client")), "Client");
        assert_eq!(
            short(&QName::new(WSE11_NS, "UnknownSubscription")),
            "wse:UnknownSubscription"
        );
        assert_eq!(
            short(&QName::new(WSA10_NS, "ActionNotSupported")),
            "wsa:ActionNotSupported"
        );
        assert_eq!(short(&QName::new("urn:app", "Stock")), "{urn:app}Stock");
    }
}
