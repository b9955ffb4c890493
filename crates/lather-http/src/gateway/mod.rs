//! Gateway mode: forward the envelope to a backend over pooled keep-alive connections,
//! round-robin over the backends, skipping those that refuse connections.

mod wsdl;

use crate::respond::HttpResponse;
use bytes::Bytes;
use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use http::{Method, Request, Response, StatusCode, Uri};
use http_body_util::{BodyExt, Full, Limited};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use lather_config::Upstream;
use lather_envelope::{Fault, FaultKind};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Headers copied from the client's request to the backend.
const FORWARDED_REQUEST_HEADERS: [HeaderName; 4] = [
    header::CONTENT_TYPE,
    HeaderName::from_static("soapaction"),
    header::ACCEPT,
    header::USER_AGENT,
];

/// Hop-by-hop headers that are never passed through (RFC 9110 §7.6.1).
const HOP_BY_HOP: [&str; 8] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "transfer-encoding",
    "te",
    "trailer",
    "upgrade",
    "content-length",
];

/// One gateway service: its backends, the shared client and the round-robin cursor.
#[derive(Debug)]
pub(crate) struct Gateway {
    client: Client<HttpConnector, Full<Bytes>>,
    upstreams: Vec<Upstream>,
    next: AtomicUsize,
    timeout: Duration,
    max_response_bytes: usize,
}

/// How one attempt at one backend ended.
enum Attempt {
    Answered(HttpResponse),
    Refused(String),
}

impl Gateway {
    pub(crate) fn new(
        upstreams: Vec<Upstream>,
        timeout: Duration,
        max_response_bytes: usize,
    ) -> Self {
        let mut connector = HttpConnector::new();
        connector.set_nodelay(true);
        connector.set_connect_timeout(Some(timeout));
        let client = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(Duration::from_secs(90))
            .pool_max_idle_per_host(1024)
            .build(connector);
        Gateway {
            client,
            upstreams,
            next: AtomicUsize::new(0),
            timeout,
            max_response_bytes,
        }
    }

    /// Forwards a SOAP request. The backend's status, content type and body (faults
    /// included) pass through. When every backend refuses the connection the answer is an
    /// `UpstreamUnavailable` fault (503); a backend that fails after accepting gives
    /// `UpstreamFailed` (502); no answer within the timeout gives `UpstreamTimeout` (504).
    pub(crate) async fn forward(
        &self,
        headers: &HeaderMap,
        body: Bytes,
    ) -> Result<HttpResponse, Fault> {
        let (_, response) = self
            .first_answer(|upstream| {
                self.request(Method::POST, &upstream.uri, headers, body.clone())
            })
            .await?;
        Ok(response)
    }

    /// The first backend's WSDL (`GET {upstream}?wsdl`) with its addresses rewritten to `location`.
    pub(crate) async fn wsdl(&self, location: &str) -> Result<HttpResponse, Fault> {
        let (upstream, response) = self
            .first_answer(|upstream| {
                let uri = with_query(&upstream.uri, "wsdl");
                self.request(Method::GET, &uri, &HeaderMap::new(), Bytes::new())
            })
            .await?;
        if response.status() != StatusCode::OK {
            return Err(Fault::with_reason(
                FaultKind::UpstreamFailed,
                format!("{}?wsdl answered {}", upstream.url, response.status()),
            ));
        }
        let (parts, body) = response.into_parts();
        let body = body
            .collect()
            .await
            .map(|c| c.to_bytes())
            .unwrap_or_default();
        let Ok(text) = std::str::from_utf8(&body) else {
            return Err(Fault::with_reason(
                FaultKind::UpstreamFailed,
                format!("{}?wsdl is not UTF-8", upstream.url),
            ));
        };
        let rewritten = wsdl::rewrite_locations(text, location);
        Ok(Response::from_parts(
            parts,
            Full::new(Bytes::from(rewritten)),
        ))
    }

    /// Sends the request `make` builds for each backend in round-robin order until one
    /// accepts the connection; its answer, or `UpstreamUnavailable` naming every refusal.
    async fn first_answer(
        &self,
        make: impl Fn(&Upstream) -> Request<Full<Bytes>>,
    ) -> Result<(&Upstream, HttpResponse), Fault> {
        let deadline = Instant::now() + self.timeout;
        let mut refusals = Vec::new();
        for upstream in self.rotation() {
            match self.attempt(upstream, make(upstream), deadline).await? {
                Attempt::Answered(response) => return Ok((upstream, response)),
                Attempt::Refused(why) => refusals.push(format!("{} ({why})", upstream.url)),
            }
        }
        Err(Fault::with_reason(
            FaultKind::UpstreamUnavailable,
            format!("no upstream accepted a connection: {}", refusals.join(", ")),
        ))
    }

    /// The backends starting at the round-robin cursor.
    fn rotation(&self) -> impl Iterator<Item = &Upstream> {
        let n = self.upstreams.len();
        let start = self.next.fetch_add(1, Ordering::Relaxed) % n;
        (0..n).map(move |i| &self.upstreams[(start + i) % n])
    }

    fn request(
        &self,
        method: Method,
        uri: &Uri,
        headers: &HeaderMap,
        body: Bytes,
    ) -> Request<Full<Bytes>> {
        let mut request = Request::new(Full::new(body));
        *request.method_mut() = method;
        *request.uri_mut() = uri.clone();
        let out = request.headers_mut();
        for name in &FORWARDED_REQUEST_HEADERS {
            if let Some(v) = headers.get(name) {
                out.insert(name.clone(), v.clone());
            }
        }
        out.insert(header::VIA, HeaderValue::from_static("1.1 lather"));
        request
    }

    async fn attempt(
        &self,
        upstream: &Upstream,
        request: Request<Full<Bytes>>,
        deadline: Instant,
    ) -> Result<Attempt, Fault> {
        let timed_out = || {
            Fault::with_reason(
                FaultKind::UpstreamTimeout,
                format!(
                    "{} did not answer within {} ms",
                    upstream.url,
                    self.timeout.as_millis()
                ),
            )
        };
        let sent = tokio::time::timeout_at(deadline.into(), self.client.request(request)).await;
        let response = match sent {
            Err(_) => return Err(timed_out()),
            Ok(Err(e)) if e.is_connect() => return Ok(Attempt::Refused(error_chain(&e))),
            Ok(Err(e)) => {
                return Err(Fault::with_reason(
                    FaultKind::UpstreamFailed,
                    format!("{} failed: {}", upstream.url, error_chain(&e)),
                ));
            }
            Ok(Ok(response)) => response,
        };
        let (parts, body) = response.into_parts();
        let collected = tokio::time::timeout_at(
            deadline.into(),
            Limited::new(body, self.max_response_bytes).collect(),
        )
        .await;
        let body = match collected {
            Err(_) => return Err(timed_out()),
            Ok(Err(e)) => {
                return Err(Fault::with_reason(
                    FaultKind::UpstreamFailed,
                    format!(
                        "reading the answer of {} failed: {e} (limit {} bytes)",
                        upstream.url, self.max_response_bytes
                    ),
                ));
            }
            Ok(Ok(c)) => c.to_bytes(),
        };
        let mut response = Response::new(Full::new(body));
        *response.status_mut() = parts.status;
        for (name, value) in &parts.headers {
            if !HOP_BY_HOP.contains(&name.as_str()) {
                response.headers_mut().append(name.clone(), value.clone());
            }
        }
        Ok(Attempt::Answered(response))
    }
}

/// `uri` with its query replaced by `query`.
fn with_query(uri: &Uri, query: &str) -> Uri {
    let mut parts = uri.clone().into_parts();
    let path = uri.path();
    parts.path_and_query = format!("{path}?{query}").parse().ok();
    Uri::from_parts(parts).unwrap_or_else(|_| uri.clone())
}

/// An error and its sources, joined: "client error (Connect): tcp connect error: Connection refused".
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let part = s.to_string();
        if !text.contains(&part) {
            text.push_str(": ");
            text.push_str(&part);
        }
        source = s.source();
    }
    text
}
