//! One POST on a connection of its own to an `http://` or `https://` address: the
//! SubscriptionEnd of an HTTP subscription, an asynchronous answer to its `ReplyTo`. The
//! host is resolved and checked by the delivery policy first (every address; connections
//! go to allowed ones only); over TLS the certificate is verified for the URL's host.

use crate::delivery::DeliveryError;
use crate::delivery::address_policy::{DeliveryPolicy, is_https, is_publish_path};
use bytes::Bytes;
use http::header::{HOST, HeaderMap, HeaderValue};
use http::{Method, Request, Uri};
use http_body_util::{BodyExt, Full, Limited};
use hyper_util::rt::TokioIo;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};

/// Most bytes of an answer read (and dropped).
const MAX_ANSWER_BYTES: usize = 64 * 1024;

/// POSTs `body` with `headers` (Content-Type, SOAPAction, …) to the `http://` or
/// `https://` URL `address`, where `guard` allows, within `timeout` as a whole (connecting,
/// the TLS handshake, the answer); success is a 2xx answer.
pub async fn post_once(
    guard: &DeliveryPolicy,
    address: &str,
    headers: HeaderMap,
    body: Bytes,
    timeout: Duration,
) -> Result<(), DeliveryError> {
    let refused = |why: &str| DeliveryError::Refused(format!("{address:?}: {why}"));
    let uri: Uri = address.parse().map_err(|_| refused("not a URL"))?;
    let tls = match uri.scheme_str() {
        Some("http") => false,
        Some("https") if is_https(address) => true,
        _ => return Err(refused("only http:// and https:// are posted to")),
    };
    let authority = uri.authority().ok_or_else(|| refused("no host"))?;
    if authority.as_str().contains('@') {
        return Err(refused("carries user information"));
    }
    let with_port = match authority.port_u16() {
        Some(_) => authority.as_str().to_owned(),
        None => format!("{}:{}", authority.as_str(), if tls { 443 } else { 80 }),
    };
    let host = HeaderValue::from_str(authority.as_str()).map_err(|_| refused("bad host"))?;
    let path: Uri = uri
        .path_and_query()
        .map_or("/", |p| p.as_str())
        .parse()
        .map_err(|_| refused("bad path"))?;
    let publish = is_publish_path(uri.path());
    let mut request = Request::new(Full::new(body));
    *request.method_mut() = Method::POST;
    *request.uri_mut() = path;
    *request.headers_mut() = headers;
    request.headers_mut().insert(HOST, host);
    let exchange = async {
        if tls {
            let stream = guard.connect_tls(&with_port, timeout, publish).await?;
            exchange(stream, request, address).await
        } else {
            let stream = guard.connect(&with_port, timeout, publish).await?;
            exchange(stream, request, address).await
        }
    };
    tokio::time::timeout(timeout, exchange).await.map_err(|_| {
        DeliveryError::Timeout(format!("{address} did not answer within {timeout:?}"))
    })?
}

/// Sends `request` on `stream` (HTTP/1.1) and reads the answer's status.
async fn exchange<S>(
    stream: S,
    request: Request<Full<Bytes>>,
    address: &str,
) -> Result<(), DeliveryError>
where
    S: AsyncRead + AsyncWrite + Send + Unpin + 'static,
{
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| DeliveryError::Connection(format!("{address}: {e}")))?;
    let connection = tokio::spawn(connection);
    let response = sender
        .send_request(request)
        .await
        .map_err(|e| DeliveryError::Connection(format!("{address}: {e}")))?;
    let status = response.status();
    // Read (a bounded part of) the answer so the exchange completes.
    let _ = Limited::new(response.into_body(), MAX_ANSWER_BYTES)
        .collect()
        .await;
    drop(sender);
    connection.abort();
    if status.is_success() {
        Ok(())
    } else {
        Err(DeliveryError::Status(status.as_u16()))
    }
}
