//! Gateway mode: forward the envelope to a backend over pooled keep-alive connections,
//! round-robin over the backends, skipping those that refuse connections.
//!
//! Faults the client gets name a backend by its place ("backend 2 of 3"), never by its
//! URL: internal addresses are logged (at warn) instead. `https://` backends are reached
//! over TLS; a TLS failure is an `UpstreamFailed` fault, not a refusal tried elsewhere.

mod backends;
mod headers;
mod tls_failure;
mod transfer_batch;
mod upstream_client;
mod wsdl;

pub(crate) use backends::Backends;
pub(crate) use headers::ResponsePolicy;
pub(crate) use upstream_client::UpstreamTls;

use bytes::Bytes;
use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use http::{Method, Request, Response, StatusCode, Uri};
use http_body_util::{BodyExt, Full, Limited};
use lather_config::{Upstream, UpstreamProtocol};
use lather_context::stream::{SendOutcome, StreamMessage, StreamSender};
use lather_envelope::{Envelope, Fault, FaultKind, SoapVersion};
use lather_pipeline::{Identity, Reply, ServiceFuture, ServiceRequest, SoapService};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Headers copied from the client's request to the backend.
const FORWARDED_REQUEST_HEADERS: [HeaderName; 4] = [
    header::CONTENT_TYPE,
    HeaderName::from_static("soapaction"),
    header::ACCEPT,
    header::USER_AGENT,
];

/// One gateway service: its backends, the shared client and the round-robin cursor.
#[derive(Debug)]
pub(crate) struct Gateway {
    /// The service's name, for logs.
    service: String,
    client: upstream_client::UpstreamClient,
    /// TLS towards `https://` backends.
    tls: UpstreamTls,
    backends: Arc<Backends>,
    next: AtomicUsize,
    timeout: Duration,
    max_response_bytes: usize,
    policy: ResponsePolicy,
    /// The request header carrying the message's [`Identity`] to the backend, if any.
    identity_header: Option<HeaderName>,
    /// Message streams to the backends (`stream = "tcp"`), if any.
    streams: Option<StreamSender>,
    /// The backend's WSDL as last fetched, kept for `wsdl_cache_ms`.
    wsdl_cache: Option<WsdlCache>,
    /// Requests from this many bytes on go gzip-compressed (`compress_requests`).
    compress_from: Option<usize>,
    /// Requests gathered into batches for the upstream (`batch_upstream`), if on.
    transfer: Option<transfer_batch::TransferBatch>,
    /// Until when requests go alone because the upstream did not take a batch.
    unbatched_until: std::sync::Mutex<Option<Instant>>,
}

/// A backend WSDL kept for a while: when it was fetched, the answer before its addresses
/// were rewritten (they are rewritten per request, for the address the client used).
#[derive(Debug)]
struct WsdlCache {
    keep: Duration,
    last: std::sync::Mutex<Option<(Instant, Passed)>>,
}

/// A backend's answer as it is passed on.
type Passed = Response<Bytes>;

/// How one attempt at one backend ended.
enum Attempt {
    Answered(Passed),
    Refused(String),
}

impl Gateway {
    pub(crate) fn new(
        service: String,
        backends: Arc<Backends>,
        timeout: Duration,
        max_response_bytes: usize,
        policy: ResponsePolicy,
        identity_header: Option<HeaderName>,
        tls: UpstreamTls,
    ) -> Self {
        Gateway {
            service,
            client: upstream_client::UpstreamClient::new(
                UpstreamProtocol::Http1,
                lather_config::DEFAULT_H1_UPSTREAM_CONNECTIONS as usize,
                timeout,
                tls.clone(),
            ),
            tls,
            backends,
            next: AtomicUsize::new(0),
            timeout,
            max_response_bytes,
            policy,
            identity_header,
            streams: None,
            wsdl_cache: None,
            compress_from: None,
            transfer: None,
            unbatched_until: std::sync::Mutex::new(None),
        }
    }

    /// Gathers requests into batches of at most `max_items`, sent `wait` after the first
    /// at the latest (`batch_upstream`).
    pub(crate) fn with_transfer_batching(mut self, cutoffs: Option<(usize, Duration)>) -> Self {
        self.transfer =
            cutoffs.map(|(items, wait)| transfer_batch::TransferBatch::new(items, wait));
        self
    }

    /// Sends `envelope` in a batch with the requests arriving with it, and returns its own
    /// answer; alone when the batch is not sent.
    async fn batched(
        &self,
        batches: &transfer_batch::TransferBatch,
        headers: &HeaderMap,
        envelope: &Envelope,
    ) -> Result<Passed, Fault> {
        use transfer_batch::{Role, Told, Waiting};
        let (reply, told) = tokio::sync::oneshot::channel();
        let waiting = Waiting {
            item: lather_envelope::batch::item(envelope),
            reply,
        };
        let version = envelope.version();
        match batches.join(version, waiting) {
            Role::Send(batch) => self.send_batch(version, batch).await,
            Role::Lead(lead) => {
                tokio::time::sleep(batches.wait).await;
                let batch = lead.take();
                if !batch.is_empty() {
                    self.send_batch(version, batch).await;
                }
            }
            Role::Follow => {}
        }
        match told.await {
            Ok(Told::Answer(answer)) => answer,
            Ok(Told::Alone) | Err(_) => {
                self.forward(headers, envelope.as_bytes().clone(), None)
                    .await
            }
        }
    }

    /// Sends `batch` as one `lb:Batch` and tells each request its result; when the upstream
    /// does not answer with a batch answer, tells them to go alone and sends requests alone
    /// for a minute.
    async fn send_batch(&self, version: SoapVersion, batch: Vec<transfer_batch::Waiting>) {
        use lather_envelope::batch::{BATCH_NS, request_body, results};
        use transfer_batch::Told;
        let body = lather_envelope::EnvelopeBuilder::new(version)
            .body(request_body(batch.iter().map(|w| &w.item)))
            .build();
        // The batch action is a fixed, valid header value.
        let headers = lather_client::soap_headers(version, Some(&format!("{BATCH_NS}#Batch")))
            .unwrap_or_default();
        let answer = match self.forward(&headers, body, None).await {
            Ok(answer) => answer,
            Err(fault) => {
                for waiting in batch {
                    let _ = waiting.reply.send(Told::Answer(Err(fault.clone())));
                }
                return;
            }
        };
        let limits = lather_envelope::Limits {
            max_message_bytes: self.max_response_bytes,
            ..lather_envelope::Limits::default()
        };
        let read = (answer.status() == StatusCode::OK)
            .then(|| Envelope::parse(answer.body().clone(), &limits).ok())
            .flatten()
            .and_then(|envelope| results(&envelope, &limits).ok())
            .filter(|results| results.len() == batch.len());
        let Some(read) = read else {
            tracing::warn!(service = %self.service, status = %answer.status(), "the upstream did not answer a batch; requests go alone for a minute");
            *self
                .unbatched_until
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner) =
                Some(Instant::now() + Duration::from_secs(60));
            for waiting in batch {
                let _ = waiting.reply.send(Told::Alone);
            }
            return;
        };
        for (waiting, result) in batch.into_iter().zip(read) {
            let mut response = Response::new(result.envelope);
            *response.status_mut() = StatusCode::from_u16(result.status).unwrap_or(StatusCode::OK);
            if !response.body().is_empty() {
                response.headers_mut().insert(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static(version.content_type()),
                );
            }
            let _ = waiting.reply.send(Told::Answer(Ok(response)));
        }
    }

    /// Whether requests are batched now (on, and the upstream took the last batch).
    fn batching(&self) -> Option<&transfer_batch::TransferBatch> {
        let batches = self.transfer.as_ref()?;
        let mut until = self
            .unbatched_until
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match *until {
            Some(t) if Instant::now() < t => None,
            Some(_) => {
                *until = None;
                Some(batches)
            }
            None => Some(batches),
        }
    }

    /// Speaks `protocol` to the upstreams over at most `connections` connections to each.
    pub(crate) fn with_upstream_protocol(
        mut self,
        protocol: UpstreamProtocol,
        connections: usize,
    ) -> Self {
        self.client = upstream_client::UpstreamClient::new(
            protocol,
            connections,
            self.timeout,
            self.tls.clone(),
        );
        self
    }

    /// Keeps the backend's WSDL for `wsdl_cache` (if any) and compresses requests from
    /// `compress_from` bytes on (if any).
    pub(crate) fn with_tuning(
        mut self,
        wsdl_cache: Option<Duration>,
        compress_from: Option<usize>,
    ) -> Self {
        self.wsdl_cache = wsdl_cache.map(|keep| WsdlCache {
            keep,
            last: std::sync::Mutex::new(None),
        });
        self.compress_from = compress_from;
        self
    }

    /// Sends over negotiated message streams where the backend grants one.
    pub(crate) fn with_streams(mut self, streams: Option<StreamSender>) -> Self {
        self.streams = streams;
        self
    }

    /// Sends the request over the message stream to the next backend, when one is open
    /// and the message fits it; `None` when it must go as SOAP/HTTP.
    async fn over_stream(
        &self,
        sender: &StreamSender,
        headers: &HeaderMap,
        envelope: &Envelope,
        identity: Option<&Identity>,
    ) -> Result<Option<Passed>, Fault> {
        let upstreams = self.backends.snapshot();
        if upstreams.is_empty() {
            return Ok(None);
        }
        let index = self.start(upstreams.len());
        let upstream = &upstreams[index];
        let mut fields = Vec::with_capacity(3);
        if let Some(v) = headers.get(header::CONTENT_TYPE) {
            let v = crate::negotiate::utf8_content_type(v);
            fields.push((
                "content-type".to_owned(),
                Bytes::copy_from_slice(v.as_bytes()),
            ));
        }
        if let Some(v) = headers.get("soapaction") {
            fields.push((
                "soapaction".to_owned(),
                Bytes::copy_from_slice(v.as_bytes()),
            ));
        }
        if let (Some(name), Some(id)) = (&self.identity_header, identity) {
            fields.push((
                name.as_str().to_owned(),
                Bytes::copy_from_slice(id.name().as_bytes()),
            ));
        }
        let message = StreamMessage {
            headers: fields,
            body: envelope.as_bytes().clone(),
        };
        let label = label(index, upstreams.len());
        let sent = tokio::time::timeout(
            self.timeout,
            sender.send(&upstream.uri, envelope.operation(), message),
        );
        match sent.await {
            Err(_) => Err(Fault::with_reason(
                FaultKind::UpstreamTimeout,
                format!(
                    "{label} did not answer within {} ms",
                    self.timeout.as_millis()
                ),
            )),
            Ok(SendOutcome::Plain(_)) => Ok(None),
            Ok(SendOutcome::Lost) => {
                tracing::warn!(service = %self.service, upstream = %upstream.url, "message stream lost with a request on it");
                Err(Fault::with_reason(
                    FaultKind::UpstreamFailed,
                    format!("{label}: the message stream was lost after the request was sent"),
                ))
            }
            Ok(SendOutcome::Answered(status, reply)) => {
                let mut passed = HeaderMap::new();
                for (name, value) in reply.headers {
                    if let (Ok(name), Ok(value)) = (
                        HeaderName::from_bytes(name.as_bytes()),
                        HeaderValue::from_maybe_shared(value),
                    ) {
                        passed.append(name, value);
                    }
                }
                let mut response = Response::new(reply.body);
                *response.status_mut() =
                    StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_GATEWAY);
                *response.headers_mut() = self.policy.filter(&passed);
                Ok(Some(response))
            }
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
        identity: Option<&Identity>,
    ) -> Result<Passed, Fault> {
        let identity = match (&self.identity_header, identity) {
            (Some(name), Some(id)) => HeaderValue::from_str(id.name())
                .ok()
                .map(|value| (name.clone(), value)),
            _ => None,
        };
        let compressed = self
            .compress_from
            .filter(|min| body.len() >= *min)
            .and_then(|_| crate::compress::gzip(&body));
        let (body, encoding) = match compressed {
            Some(gzipped) => (Bytes::from(gzipped), Some(HeaderValue::from_static("gzip"))),
            None => (body, None),
        };
        let (_, _, response) = self
            .first_answer(|upstream| {
                let mut request = self.request(Method::POST, &upstream.uri, headers, body.clone());
                if let Some((name, value)) = &identity {
                    request.headers_mut().insert(name.clone(), value.clone());
                }
                if let Some(encoding) = &encoding {
                    request
                        .headers_mut()
                        .insert(header::CONTENT_ENCODING, encoding.clone());
                }
                request
            })
            .await?;
        Ok(response)
    }

    /// The first backend's WSDL (`GET {upstream}?wsdl`) with its addresses rewritten to
    /// `location`; from the cache when it was fetched less than `wsdl_cache_ms` ago.
    pub(crate) async fn wsdl(&self, location: &str) -> Result<Passed, Fault> {
        let cached = self.wsdl_cache.as_ref().and_then(|cache| {
            let last = cache.last.lock().unwrap_or_else(|p| p.into_inner());
            last.as_ref()
                .filter(|(at, _)| at.elapsed() < cache.keep)
                .map(|(_, answer)| answer.clone())
        });
        let response = match cached {
            Some(answer) => answer,
            None => {
                let answer = self.fetch_wsdl().await?;
                if let Some(cache) = &self.wsdl_cache {
                    *cache.last.lock().unwrap_or_else(|p| p.into_inner()) =
                        Some((Instant::now(), answer.clone()));
                }
                answer
            }
        };
        let (parts, body) = response.into_parts();
        // Checked UTF-8 when fetched.
        let text = String::from_utf8_lossy(&body);
        let rewritten = wsdl::rewrite_locations(&text, location);
        Ok(Response::from_parts(parts, Bytes::from(rewritten)))
    }

    /// The first backend's WSDL as it answered it: 200 and UTF-8, or a fault.
    async fn fetch_wsdl(&self) -> Result<Passed, Fault> {
        let (upstream, label, response) = self
            .first_answer(|upstream| {
                let uri = with_query(&upstream.uri, "wsdl");
                self.request(Method::GET, &uri, &HeaderMap::new(), Bytes::new())
            })
            .await?;
        if response.status() != StatusCode::OK {
            tracing::warn!(service = %self.service, upstream = %upstream.url, status = %response.status(), "backend WSDL request failed");
            return Err(Fault::with_reason(
                FaultKind::UpstreamFailed,
                format!("{label}'s WSDL answered {}", response.status()),
            ));
        }
        if std::str::from_utf8(response.body()).is_err() {
            tracing::warn!(service = %self.service, upstream = %upstream.url, "backend WSDL is not UTF-8");
            return Err(Fault::with_reason(
                FaultKind::UpstreamFailed,
                format!("{label}'s WSDL is not UTF-8"),
            ));
        }
        Ok(response)
    }

    /// Sends the request `make` builds for each backend in round-robin order until one
    /// accepts the connection; its index and answer, or `UpstreamUnavailable` counting the
    /// refusals (each logged with its URL).
    async fn first_answer(
        &self,
        make: impl Fn(&Upstream) -> Request<Full<Bytes>>,
    ) -> Result<(Upstream, String, Passed), Fault> {
        let deadline = Instant::now() + self.timeout;
        let upstreams = self.backends.snapshot();
        if upstreams.is_empty() {
            return Err(Fault::with_reason(
                FaultKind::UpstreamUnavailable,
                self.backends.none_why(),
            ));
        }
        let mut refusals = Vec::new();
        for index in self.rotation(upstreams.len()) {
            let upstream = &upstreams[index];
            let label = label(index, upstreams.len());
            match self
                .attempt(upstream, &label, make(upstream), deadline)
                .await?
            {
                Attempt::Answered(response) => return Ok((upstream.clone(), label, response)),
                Attempt::Refused(why) => refusals.push(format!("{label} ({why})")),
            }
        }
        Err(Fault::with_reason(
            FaultKind::UpstreamUnavailable,
            format!("no upstream accepted a connection: {}", refusals.join(", ")),
        ))
    }

    /// The indexes of `n` backends, starting at the round-robin cursor.
    fn rotation(&self, n: usize) -> impl Iterator<Item = usize> + use<> {
        let start = self.start(n);
        (0..n).map(move |i| (start + i) % n)
    }

    /// The next backend of `n` (at least 1) in round-robin order.
    fn start(&self, n: usize) -> usize {
        self.next.fetch_add(1, Ordering::Relaxed) % n
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
                // The envelope forwarded is UTF-8 even when the client sent UTF-16.
                let v = if *name == header::CONTENT_TYPE {
                    crate::negotiate::utf8_content_type(v)
                } else {
                    v.clone()
                };
                out.insert(name.clone(), v);
            }
        }
        out.insert(header::VIA, HeaderValue::from_static("1.1 lather"));
        request
    }

    async fn attempt(
        &self,
        upstream: &Upstream,
        label: &str,
        request: Request<Full<Bytes>>,
        deadline: Instant,
    ) -> Result<Attempt, Fault> {
        let timed_out = || {
            tracing::warn!(service = %self.service, upstream = %upstream.url, timeout_ms = self.timeout.as_millis() as u64, "backend did not answer in time");
            Fault::with_reason(
                FaultKind::UpstreamTimeout,
                format!(
                    "{} did not answer within {} ms",
                    label,
                    self.timeout.as_millis()
                ),
            )
        };
        let Ok(held) =
            tokio::time::timeout_at(deadline.into(), self.client.hold(&upstream.url)).await
        else {
            return Err(timed_out());
        };
        let sent = tokio::time::timeout_at(deadline.into(), self.client.send(request)).await;
        let response = match sent {
            Err(_) => return Err(timed_out()),
            Ok(Err(e)) if tls_failure::find(&e).is_some() => {
                let why = tls_failure::find(&e).map(tls_failure::describe);
                tracing::warn!(service = %self.service, upstream = %upstream.url, error = %error_chain(&e), "TLS with the backend failed");
                return Err(Fault::with_reason(
                    FaultKind::UpstreamFailed,
                    format!("{label}: {}", why.unwrap_or_default()),
                ));
            }
            Ok(Err(e)) if e.is_connect() => {
                tracing::warn!(service = %self.service, upstream = %upstream.url, error = %error_chain(&e), "backend refused the connection");
                return Ok(Attempt::Refused(io_kind(&e)));
            }
            Ok(Err(e)) => {
                tracing::warn!(service = %self.service, upstream = %upstream.url, error = %error_chain(&e), "backend failed");
                return Err(Fault::with_reason(
                    FaultKind::UpstreamFailed,
                    format!("{} failed: {}", label, io_kind(&e)),
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
                tracing::warn!(service = %self.service, upstream = %upstream.url, error = %e, "reading the backend's answer failed");
                return Err(Fault::with_reason(
                    FaultKind::UpstreamFailed,
                    format!(
                        "reading the answer of {} failed: {e} (limit {} bytes)",
                        label, self.max_response_bytes
                    ),
                ));
            }
            Ok(Ok(c)) => c.to_bytes(),
        };
        drop(held);
        let mut response = Response::new(body);
        *response.status_mut() = parts.status;
        *response.headers_mut() = self.policy.filter(&parts.headers);
        Ok(Attempt::Answered(response))
    }
}

impl SoapService for Gateway {
    fn call<'a>(&'a self, request: ServiceRequest<'a>) -> ServiceFuture<'a> {
        Box::pin(async move {
            let identity = request.context.properties.get::<Identity>();
            if let Some(sender) = &self.streams
                && let Some(answer) = self
                    .over_stream(sender, request.headers, &request.envelope, identity)
                    .await?
            {
                return Ok(Reply::Http(answer));
            }
            if let Some(batches) = self.batching() {
                let answer = self
                    .batched(batches, request.headers, &request.envelope)
                    .await?;
                return Ok(Reply::Http(answer));
            }
            let body = request.envelope.as_bytes().clone();
            let answer = self.forward(request.headers, body, identity).await?;
            Ok(Reply::Http(answer))
        })
    }

    fn wsdl<'a>(&'a self, location: &'a str) -> ServiceFuture<'a> {
        Box::pin(async move { Ok(Reply::Http(Gateway::wsdl(self, location).await?)) })
    }

    fn is_ultimate_receiver(&self) -> bool {
        false
    }
}

/// `uri` with its query replaced by `query`.
fn with_query(uri: &Uri, query: &str) -> Uri {
    let mut parts = uri.clone().into_parts();
    let path = uri.path();
    parts.path_and_query = format!("{path}?{query}").parse().ok();
    Uri::from_parts(parts).unwrap_or_else(|_| uri.clone())
}

/// What went wrong in words that name no address: the I/O error's kind when there is one
/// ("connection refused"), else hyper's own (fixed) description, else "connection failed".
fn io_kind(e: &(dyn std::error::Error + 'static)) -> String {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    let mut hyper = None;
    while let Some(s) = source {
        if let Some(io) = s.downcast_ref::<std::io::Error>() {
            return io.kind().to_string();
        }
        if hyper.is_none() && s.is::<hyper::Error>() {
            hyper = Some(s.to_string());
        }
        source = s.source();
    }
    hyper.unwrap_or_else(|| "connection failed".to_owned())
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

/// How a client-facing fault names backend `index` of `n`: "backend 2 of 3" (never its URL).
fn label(index: usize, n: usize) -> String {
    format!("backend {} of {n}", index + 1)
}
