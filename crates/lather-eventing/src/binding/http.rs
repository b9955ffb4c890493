//! SOAP over HTTP/1.1: one POST per notification on the sink's keep-alive connection,
//! awaited before the next (so notifications arrive in order), retried with backoff.

use super::soap::Template;
use crate::Subscription;
use crate::delivery::{Outgoing, RetryPolicy};
use crate::event::Stamped;
use crate::reply::soap_of;
use bytes::Bytes;
use http::header::{CONTENT_TYPE, HeaderValue};
use http::{Method, Request, Uri};
use http_body_util::{BodyExt, Full, Limited};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use lather_envelope::SoapVersion;
use std::sync::Arc;
use std::time::Duration;

/// Most bytes of a sink's answer read (so its connection stays reusable).
const MAX_ANSWER_BYTES: usize = 64 * 1024;

pub(crate) type HttpClient = Client<HttpConnector, Full<Bytes>>;

/// A keep-alive HTTP client with a pool of its own.
pub(crate) fn client() -> HttpClient {
    let mut connector = HttpConnector::new();
    connector.set_nodelay(true);
    Client::builder(TokioExecutor::new())
        .pool_idle_timeout(Duration::from_secs(90))
        .build(connector)
}

/// One HTTP sink.
#[derive(Debug)]
pub(crate) struct HttpSink {
    client: HttpClient,
    address: String,
    uri: Option<Uri>,
    soap: SoapVersion,
    template: Template,
    policy: RetryPolicy,
    /// The last action's header values (SOAPAction or Content-Type), reused while the
    /// action stays the same.
    headers: Option<(String, Headers)>,
}

#[derive(Debug, Clone)]
struct Headers {
    soap_action: Option<HeaderValue>,
    content_type: HeaderValue,
}

impl HttpSink {
    pub(crate) fn new(sub: &Subscription, policy: RetryPolicy) -> HttpSink {
        HttpSink {
            client: client(),
            address: sub.notify_to.address.clone(),
            uri: sub.notify_to.address.parse().ok(),
            soap: soap_of(sub),
            template: Template::new(sub),
            policy,
            headers: None,
        }
    }

    pub(crate) async fn deliver(
        &mut self,
        batch: &[Arc<Stamped>],
        ready: &(dyn Fn(&[Arc<Stamped>]) + Send + Sync),
    ) -> Result<(), String> {
        for (i, event) in batch.iter().enumerate() {
            let mut bytes = Vec::new();
            self.template.render(event, &mut bytes);
            let headers = self.headers_for(&event.action)?;
            ready(&batch[i..=i]);
            let body = Bytes::from(bytes);
            let policy = self.policy;
            let mut backoff = policy.first_backoff;
            let mut last = String::new();
            let mut sent = false;
            for attempt in 0..policy.attempts.max(1) {
                if attempt > 0 {
                    tokio::time::sleep(backoff).await;
                    backoff = backoff.saturating_mul(2);
                }
                match self.post(&headers, body.clone()).await {
                    Ok(()) => {
                        sent = true;
                        break;
                    }
                    Err(why) => last = why,
                }
            }
            if !sent {
                return Err(last);
            }
        }
        Ok(())
    }

    fn headers_for(&mut self, action: &str) -> Result<Headers, String> {
        if let Some((known, headers)) = &self.headers
            && known == action
        {
            return Ok(headers.clone());
        }
        let headers = headers(self.soap, action)?;
        self.headers = Some((action.to_owned(), headers.clone()));
        Ok(headers)
    }

    async fn post(&self, headers: &Headers, body: Bytes) -> Result<(), String> {
        let Some(uri) = self.uri.clone() else {
            return Err(format!("{} is not a usable URL", self.address));
        };
        let mut request = Request::builder()
            .method(Method::POST)
            .uri(uri)
            .body(Full::new(body))
            .map_err(|e| e.to_string())?;
        if let Some(soap_action) = &headers.soap_action {
            request
                .headers_mut()
                .insert("soapaction", soap_action.clone());
        }
        request
            .headers_mut()
            .insert(CONTENT_TYPE, headers.content_type.clone());
        exchange(&self.client, request, self.policy.timeout).await
    }
}

/// The SOAPAction (1.1) and Content-Type of a message with `action`.
fn headers(soap: SoapVersion, action: &str) -> Result<Headers, String> {
    let action = action.replace('"', "%22");
    Ok(match soap {
        SoapVersion::V11 => Headers {
            soap_action: Some(
                HeaderValue::from_str(&format!("\"{action}\"")).map_err(|e| e.to_string())?,
            ),
            content_type: HeaderValue::from_static("text/xml; charset=utf-8"),
        },
        SoapVersion::V12 => Headers {
            soap_action: None,
            content_type: HeaderValue::from_str(&format!(
                "application/soap+xml; charset=utf-8; action=\"{action}\""
            ))
            .map_err(|e| e.to_string())?,
        },
    })
}

/// Sends `request`; success is a 2xx answer within `timeout`.
async fn exchange(
    client: &HttpClient,
    request: Request<Full<Bytes>>,
    timeout: Duration,
) -> Result<(), String> {
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

/// POSTs `out` to `address` once; success is a 2xx answer.
pub(crate) async fn send_once(
    client: &HttpClient,
    address: &str,
    soap: SoapVersion,
    out: &Outgoing,
    timeout: Duration,
) -> Result<(), String> {
    let headers = headers(soap, &out.action)?;
    let mut request = Request::builder()
        .method(Method::POST)
        .uri(address)
        .body(Full::new(out.envelope.clone()))
        .map_err(|e| e.to_string())?;
    if let Some(soap_action) = headers.soap_action {
        request.headers_mut().insert("soapaction", soap_action);
    }
    request
        .headers_mut()
        .insert(CONTENT_TYPE, headers.content_type);
    exchange(client, request, timeout).await
}
