//! Delivering an answer to its `ReplyTo`: an HTTP POST through the delivery policy (every
//! address the host resolves to checked, this server's own port refused).

use bytes::Bytes;
use http::{HeaderValue, Method, Request};
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use lather_envelope::SoapVersion;
use lather_eventing::{DeliveryError, DeliveryPolicy};
use std::time::Duration;

/// POSTs `body` (an envelope in `version`) to the `http://` URL `to` within `timeout`;
/// any 2xx answer is success.
pub(crate) async fn post(
    policy: &DeliveryPolicy,
    to: &str,
    version: SoapVersion,
    action: Option<&str>,
    body: Bytes,
    timeout: Duration,
) -> Result<(), DeliveryError> {
    let refused = |why: &str| DeliveryError::Refused(format!("ReplyTo {to:?}: {why}"));
    let uri: http::Uri = to.parse().map_err(|_| refused("not a URL"))?;
    if uri.scheme_str() != Some("http") {
        return Err(refused("only http:// is delivered to"));
    }
    let authority = uri.authority().ok_or_else(|| refused("no host"))?;
    let with_port = match authority.port_u16() {
        Some(_) => authority.as_str().to_owned(),
        None => format!("{}:80", authority.as_str()),
    };
    let stream = policy.connect(&with_port, timeout, false).await?;
    let exchange = async {
        let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| DeliveryError::Connection(format!("{to}: {e}")))?;
        tokio::spawn(connection);
        let mut request = Request::new(Full::new(body));
        *request.method_mut() = Method::POST;
        *request.uri_mut() = uri
            .path_and_query()
            .map_or("/", |p| p.as_str())
            .parse()
            .map_err(|_| refused("bad path"))?;
        let headers = request.headers_mut();
        *headers = lather_client::soap_headers(version, action)
            .map_err(|_| refused("its action cannot be an HTTP header"))?;
        headers.insert(
            http::header::HOST,
            HeaderValue::from_str(authority.as_str()).map_err(|_| refused("bad host"))?,
        );
        let response = sender
            .send_request(request)
            .await
            .map_err(|e| DeliveryError::Connection(format!("{to}: {e}")))?;
        let status = response.status();
        // Read (and drop) the answer so the exchange completes.
        let _ = response.into_body().collect().await;
        if status.is_success() {
            Ok(())
        } else {
            Err(DeliveryError::Status(status.as_u16()))
        }
    };
    tokio::time::timeout(timeout, exchange)
        .await
        .map_err(|_| DeliveryError::Timeout(format!("{to} did not answer within {timeout:?}")))?
}
