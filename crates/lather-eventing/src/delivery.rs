//! Push delivery: each subscription has its own bounded queue and its own task with its
//! own keep-alive connection pool, so a slow or dead sink only ever delays itself.

use crate::reply::soap_of;
use crate::{EndStatus, Subscription};
use bytes::Bytes;
use http::header::{CONTENT_ENCODING, CONTENT_TYPE, HeaderValue};
use http::{Method, Request};
use http_body_util::{BodyExt, Full, Limited};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use lather_envelope::SoapVersion;
use std::sync::Weak;
use std::time::Duration;
use tokio::sync::mpsc;

/// Most bytes of a sink's answer read (so its connection stays reusable).
const MAX_ANSWER_BYTES: usize = 64 * 1024;

/// How hard delivery tries before it gives a sink up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts per notification (at least 1).
    pub attempts: u32,
    /// Wait before the second attempt; doubled before each further one.
    pub first_backoff: Duration,
    /// Longest wait for one attempt's answer.
    pub timeout: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            attempts: 4,
            first_backoff: Duration::from_millis(100),
            timeout: Duration::from_secs(10),
        }
    }
}

/// One message queued for a sink: its action and its envelope.
#[derive(Debug, Clone)]
pub(crate) struct Outgoing {
    pub(crate) action: String,
    pub(crate) envelope: Bytes,
    /// The `Content-Encoding` of `envelope`, if it is compressed.
    pub(crate) content_encoding: Option<&'static str>,
}

pub(crate) type HttpClient = Client<HttpConnector, Full<Bytes>>;

/// A keep-alive HTTP client with a pool of its own.
pub(crate) fn client() -> HttpClient {
    Client::builder(TokioExecutor::new())
        .pool_idle_timeout(Duration::from_secs(90))
        .build_http()
}

/// Starts `sub`'s delivery task and returns its queue. Notifications of at least
/// `gzip_from` bytes are gzip-compressed (none if `None`). When every attempt for a
/// notification fails the task asks `source` to end the subscription with DeliveryFailure.
pub(crate) fn spawn_sink(
    sub: &Subscription,
    capacity: usize,
    policy: RetryPolicy,
    gzip_from: Option<usize>,
    source: Weak<crate::source::Inner>,
) -> mpsc::Sender<Outgoing> {
    let (tx, mut rx) = mpsc::channel::<Outgoing>(capacity.max(1));
    let id = sub.id.clone();
    let address = sub.notify_to.address.clone();
    let soap = soap_of(sub);
    tokio::spawn(async move {
        let client = client();
        while let Some(mut out) = rx.recv().await {
            if out.content_encoding.is_none()
                && let Some(packed) =
                    gzip_from.and_then(|min| crate::compression::gzip(&out.envelope, min))
            {
                out.envelope = packed;
                out.content_encoding = Some("gzip");
            }
            if let Err(why) = send_with_retries(&client, &address, soap, &out, policy).await {
                tracing::warn!(subscription = %id, %address, "delivery failed: {why}");
                if let Some(source) = source.upgrade() {
                    crate::source::end(
                        &source,
                        &id,
                        EndStatus::DeliveryFailure,
                        &format!("notifications to {address} failed: {why}"),
                    )
                    .await;
                }
                return;
            }
        }
    });
    tx
}

async fn send_with_retries(
    client: &HttpClient,
    address: &str,
    soap: SoapVersion,
    out: &Outgoing,
    policy: RetryPolicy,
) -> Result<(), String> {
    let mut backoff = policy.first_backoff;
    let mut last = String::new();
    for attempt in 0..policy.attempts.max(1) {
        if attempt > 0 {
            tokio::time::sleep(backoff).await;
            backoff = backoff.saturating_mul(2);
        }
        match send_once(client, address, soap, out, policy.timeout).await {
            Ok(()) => return Ok(()),
            Err(why) => last = why,
        }
    }
    Err(last)
}

/// POSTs `out` to `address` once; success is a 2xx answer.
pub(crate) async fn send_once(
    client: &HttpClient,
    address: &str,
    soap: SoapVersion,
    out: &Outgoing,
    timeout: Duration,
) -> Result<(), String> {
    let mut request = Request::builder()
        .method(Method::POST)
        .uri(address)
        .body(Full::new(out.envelope.clone()))
        .map_err(|e| e.to_string())?;
    let action = out.action.replace('"', "%22");
    let content_type = match soap {
        SoapVersion::V11 => {
            let soap_action =
                HeaderValue::from_str(&format!("\"{action}\"")).map_err(|e| e.to_string())?;
            request.headers_mut().insert("soapaction", soap_action);
            HeaderValue::from_static("text/xml; charset=utf-8")
        }
        SoapVersion::V12 => HeaderValue::from_str(&format!(
            "application/soap+xml; charset=utf-8; action=\"{action}\""
        ))
        .map_err(|e| e.to_string())?,
    };
    request.headers_mut().insert(CONTENT_TYPE, content_type);
    if let Some(encoding) = out.content_encoding {
        request
            .headers_mut()
            .insert(CONTENT_ENCODING, HeaderValue::from_static(encoding));
    }
    let answer = tokio::time::timeout(timeout, async {
        let response = client.request(request).await.map_err(|e| e.to_string())?;
        let status = response.status();
        // Read (a bounded part of) the answer so the connection can be reused.
        let _ = Limited::new(response.into_body(), MAX_ANSWER_BYTES)
            .collect()
            .await;
        Ok::<_, String>(status)
    })
    .await
    .map_err(|_| format!("no answer within {timeout:?}"))??;
    if answer.is_success() {
        Ok(())
    } else {
        Err(format!("the sink answered {answer}"))
    }
}
