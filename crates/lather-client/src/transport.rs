//! One HTTP exchange: POST an envelope with the version's content type and action, read
//! the answer within the size bound and the request timeout.

use crate::builder::ClientBuilder;
use crate::connector::{Connector, checked_uri, connector};
use crate::error::ClientError;
use bytes::Bytes;
use http::header::{CONTENT_LENGTH, CONTENT_TYPE, HeaderValue, USER_AGENT};
use http::{Method, Request};
use http_body_util::{BodyExt, Full, LengthLimitError, Limited};
use hyper_util::client::legacy::Client as Pool;
use hyper_util::rt::TokioExecutor;
use lather_envelope::SoapVersion;
use std::time::Duration;

/// The pooled HTTP client and the bounds every exchange keeps.
#[derive(Debug, Clone)]
pub(crate) struct Transport {
    pool: Pool<Connector, Full<Bytes>>,
    user_agent: HeaderValue,
    request_timeout: Duration,
    max_response_bytes: usize,
}

/// An answer as it came off the wire.
#[derive(Debug)]
pub(crate) struct Received {
    pub(crate) status: u16,
    pub(crate) content_type: Option<String>,
    pub(crate) body: Bytes,
}

/// The HTTP headers of a SOAP request in `version` with `action`: SOAP 1.1's
/// `Content-Type: text/xml` and a quoted `SOAPAction` (always sent, empty when unknown:
/// WS-I BP R2744); SOAP 1.2's `application/soap+xml` with the action as its parameter.
/// An action that cannot be an HTTP header value is [`ClientError::InvalidRequest`].
pub fn soap_headers(
    version: SoapVersion,
    action: Option<&str>,
) -> Result<http::HeaderMap, ClientError> {
    let header = |text: String| {
        HeaderValue::from_str(&text).map_err(|_| ClientError::InvalidRequest {
            reason: format!("action {action:?} cannot be sent in an HTTP header"),
        })
    };
    // A `"` would end the quoted string: percent-encode it, as URIs allow.
    let quoted = action.map(|a| format!("\"{}\"", a.replace('"', "%22")));
    let mut headers = http::HeaderMap::new();
    match version {
        SoapVersion::V11 => {
            headers.insert(
                CONTENT_TYPE,
                HeaderValue::from_static("text/xml; charset=utf-8"),
            );
            let value = quoted.unwrap_or_else(|| "\"\"".to_owned());
            headers.insert("soapaction", header(value)?);
        }
        SoapVersion::V12 => {
            let value = match quoted {
                Some(q) => header(format!("application/soap+xml; charset=utf-8; action={q}"))?,
                None => HeaderValue::from_static("application/soap+xml; charset=utf-8"),
            };
            headers.insert(CONTENT_TYPE, value);
        }
    }
    Ok(headers)
}

impl Transport {
    /// A pool with `settings`; a user agent that cannot be a header value is refused.
    pub(crate) fn new(settings: &ClientBuilder) -> Result<Transport, ClientError> {
        let user_agent = HeaderValue::from_str(&settings.user_agent).map_err(|_| {
            ClientError::InvalidRequest {
                reason: format!(
                    "user agent {:?} is not a valid header value",
                    settings.user_agent
                ),
            }
        })?;
        let pool = Pool::builder(TokioExecutor::new())
            .pool_idle_timeout(settings.pool_idle_timeout)
            .pool_max_idle_per_host(settings.pool_max_idle_per_host)
            .build(connector(settings));
        Ok(Transport {
            pool,
            user_agent,
            request_timeout: settings.request_timeout,
            max_response_bytes: settings.max_response_bytes,
        })
    }

    /// POSTs `envelope` to `url` as SOAP `version` with `action`, and reads the answer.
    pub(crate) async fn post(
        &self,
        url: &str,
        version: SoapVersion,
        action: Option<&str>,
        envelope: Bytes,
    ) -> Result<Received, ClientError> {
        let request = self.request(url, version, action, envelope)?;
        tokio::time::timeout(self.request_timeout, self.exchange(url, request))
            .await
            .map_err(|_| ClientError::Timeout {
                url: url.to_owned(),
                after: self.request_timeout,
            })?
    }

    fn request(
        &self,
        url: &str,
        version: SoapVersion,
        action: Option<&str>,
        envelope: Bytes,
    ) -> Result<Request<Full<Bytes>>, ClientError> {
        let uri = checked_uri(url)?;
        let mut request = Request::new(Full::new(envelope));
        *request.method_mut() = Method::POST;
        *request.uri_mut() = uri;
        *request.headers_mut() = soap_headers(version, action)?;
        request
            .headers_mut()
            .insert(USER_AGENT, self.user_agent.clone());
        Ok(request)
    }

    async fn exchange(
        &self,
        url: &str,
        request: Request<Full<Bytes>>,
    ) -> Result<Received, ClientError> {
        let response = self.pool.request(request).await.map_err(|e| {
            if e.is_connect() {
                ClientError::Connect {
                    url: url.to_owned(),
                    source: Box::new(e),
                }
            } else {
                ClientError::Transport {
                    url: url.to_owned(),
                    source: Box::new(e),
                }
            }
        })?;
        let status = response.status().as_u16();
        let too_large = ClientError::TooLarge {
            limit: self.max_response_bytes,
        };
        let declared = response
            .headers()
            .get(CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        if declared.is_some_and(|n| n > self.max_response_bytes as u64) {
            return Err(too_large);
        }
        let content_type = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let body = Limited::new(response.into_body(), self.max_response_bytes)
            .collect()
            .await
            .map_err(|e| {
                if e.downcast_ref::<LengthLimitError>().is_some() {
                    too_large
                } else {
                    ClientError::Transport {
                        url: url.to_owned(),
                        source: e,
                    }
                }
            })?
            .to_bytes();
        Ok(Received {
            status,
            content_type,
            body,
        })
    }
}
