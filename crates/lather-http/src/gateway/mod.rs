//! Gateway mode: forward the envelope to a backend over pooled keep-alive connections,
//! picked by the service's balancing policy; a backend that refuses or does not open a
//! connection in time is skipped for the next, and so is one that fails or does not answer
//! a request that may be sent twice. Backends that fail in a row are ejected for a while;
//! active health checks take failing ones out.
//!
//! Faults the client gets name a backend by its place ("backend 2 of 3"), never by its
//! URL unless `expose_backend_errors` is on: internal addresses are logged (at warn).
//! `https://` backends are reached over TLS; a TLS failure is an `UpstreamFailed` fault
//! (the certificate will not change on the next try), not a refusal tried elsewhere.

mod answer_read;
mod backend;
mod backends;
mod balance;
mod direct_h1;
mod forwarding;
mod header_list;
mod headers;
mod health_check;
mod resource;
mod tls_failure;
mod transfer_batch;
mod upstream_client;
mod wsdl;

use answer_read::AnswerError;
pub(crate) use backend::{Backend, FailureKind, Standing};
pub(crate) use backends::Backends;
use direct_h1::DirectError;
pub(crate) use forwarding::RequestRules;
use header_list::HeaderList;
pub(crate) use headers::ResponsePolicy;
use resource::BackendPath;
pub(crate) use resource::requested as requested_document;
pub(crate) use upstream_client::UpstreamTls;
use upstream_client::{Unanswered, UpstreamRequest};
pub(crate) use wsdl::Imported;

use crate::arrival::Arrival;

use backend::Ejection;
use bytes::Bytes;
use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use http::{Method, Response, StatusCode, Uri};
use lather_config::{Failover, UpstreamProtocol};
use lather_context::stream::{SendOutcome, StreamMessage, StreamSender};
use lather_envelope::{Envelope, Fault, FaultKind, SoapVersion};
use lather_pipeline::{Identity, Ready, Reply, ServiceFuture, ServiceRequest, SoapService};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// One gateway service: its backends, the shared client and the round-robin cursor.
#[derive(Debug)]
pub(crate) struct Gateway {
    /// The service's name, for logs.
    service: String,
    client: upstream_client::UpstreamClient,
    /// How the client speaks to the upstreams, and over how many connections each.
    protocol: (UpstreamProtocol, usize),
    /// TLS towards `https://` backends.
    tls: UpstreamTls,
    backends: Arc<Backends>,
    balancer: balance::Balancer,
    failover: Failover,
    ejection: Ejection,
    timeout: Duration,
    max_response_bytes: usize,
    policy: ResponsePolicy,
    /// The service's request header rules.
    rules: RequestRules,
    /// The request header carrying the message's [`Identity`] to the backend, if any.
    identity_header: Option<HeaderName>,
    /// Message streams to the backends (`stream = "tcp"`), if any.
    streams: Option<StreamSender>,
    /// The backend's WSDL and imported documents as last fetched, kept for
    /// `wsdl_cache_ms`.
    wsdl_cache: Option<WsdlCache>,
    /// Requests from this many bytes on go gzip-compressed (`compress_requests`).
    compress_from: Option<usize>,
    /// Requests gathered into batches for the upstream (`batch_upstream`), if on.
    transfer: Option<transfer_batch::TransferBatch>,
    /// Until when requests go alone because the upstream did not take a batch.
    unbatched_until: std::sync::Mutex<Option<Instant>>,
    /// Whether answers name the backend that answered ([`crate::access::UpstreamUsed`]),
    /// for the access log; off with the log, since it costs an allocation or three.
    name_upstream: bool,
}

/// Backend documents kept for a while, by what was asked for: when each was fetched,
/// from where, and the answer before its addresses were rewritten (they are rewritten per
/// request, for the address the client used).
#[derive(Debug)]
struct WsdlCache {
    keep: Duration,
    /// Most documents held at once (`wsdl_cache_documents`).
    max_docs: usize,
    docs: std::sync::Mutex<HashMap<String, Fetched>>,
}

/// A backend document as fetched: when, its URL (imports are resolved against it), and
/// the answer.
type Fetched = (Instant, Uri, Passed);

/// A document of the backend a gateway serves.
#[derive(Debug, Clone)]
pub(crate) enum Document {
    /// The backend's WSDL, `{upstream}?wsdl`; below a prefix, `{upstream}{below}?wsdl`.
    Wsdl {
        /// The request's path below the service's prefix, if it has one.
        below: Option<String>,
    },
    /// A document the WSDL imports, by its path on the backend's origin.
    Imported(BackendPath),
}

impl Document {
    /// The cache key of the document.
    fn key(&self) -> String {
        match self {
            Document::Wsdl { below } => format!("wsdl {}", below.as_deref().unwrap_or("")),
            Document::Imported(path) => format!("doc {}", path.as_str()),
        }
    }

    /// Where the document is on `upstream`.
    fn on(&self, upstream: &Uri) -> Uri {
        match self {
            Document::Wsdl { below } => {
                let base = match below {
                    Some(below) => below_prefix(upstream, below, None),
                    None => upstream.clone(),
                };
                with_query(&base, "wsdl")
            }
            // A checked path joins any backend's origin.
            Document::Imported(path) => {
                resource::on(upstream, path).unwrap_or_else(|| upstream.clone())
            }
        }
    }
}

/// A backend's answer as it is passed on.
type Passed = Response<Bytes>;

/// Why one try at one backend failed.
#[derive(Debug)]
struct Failure {
    kind: FailureKind,
    /// What happened, naming no address: "connection refused".
    what: String,
    /// The error with its sources, for logs and exposed faults.
    detail: String,
}

impl Failure {
    /// Whether the request may have reached the backend.
    fn sent(&self) -> bool {
        !matches!(
            self.kind,
            FailureKind::Refused | FailureKind::ConnectTimeout
        )
    }
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
        let protocol = (
            UpstreamProtocol::Http1,
            lather_config::DEFAULT_H1_UPSTREAM_CONNECTIONS as usize,
        );
        let failover = Failover {
            connect_timeout: Duration::from_millis(lather_config::DEFAULT_CONNECT_TIMEOUT_MS)
                .min(timeout),
            try_timeout: None,
            idempotent: lather_config::Idempotent::None,
            max_attempts: lather_config::DEFAULT_MAX_ATTEMPTS as usize,
            balance: lather_config::Balance::RoundRobin,
            eject_after: lather_config::DEFAULT_EJECT_AFTER_FAILURES as u32,
            eject_for: Duration::from_millis(lather_config::DEFAULT_EJECT_MS),
            expose_backend_errors: false,
            health_check: None,
        };
        Gateway {
            service,
            client: upstream_client::UpstreamClient::new(
                protocol.0,
                protocol.1,
                failover.connect_timeout,
                tls.clone(),
            ),
            protocol,
            tls,
            backends,
            balancer: balance::Balancer::new(failover.balance),
            ejection: ejection_of(&failover, timeout),
            failover,
            timeout,
            max_response_bytes,
            policy,
            rules: RequestRules::default(),
            identity_header,
            streams: None,
            wsdl_cache: None,
            compress_from: None,
            transfer: None,
            unbatched_until: std::sync::Mutex::new(None),
            name_upstream: true,
        }
    }

    /// Whether answers name the backend that answered, for the access log (on unless the
    /// server's `access_log` is off).
    pub(crate) fn with_access_log(mut self, on: bool) -> Self {
        self.name_upstream = on;
        self
    }

    /// Applies `rules` to every request to the backends.
    pub(crate) fn with_request_rules(mut self, rules: RequestRules) -> Self {
        self.rules = rules;
        self
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
                self.forward(
                    headers,
                    envelope.as_bytes().clone(),
                    None,
                    None,
                    envelope.operation().map(|op| op.local()),
                )
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
        // A batch is one request for every operation in it: resent only when all may be.
        let answer = match self.forward(&headers, body, None, None, None).await {
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
        self.protocol = (protocol, connections);
        self.client = upstream_client::UpstreamClient::new(
            protocol,
            connections,
            self.failover.connect_timeout,
            self.tls.clone(),
        );
        self
    }

    /// Balances, retries and ejects by `failover`, and starts its health checks (if any;
    /// they end with the gateway's backends). Must be called within a tokio runtime when
    /// health checks are configured.
    pub(crate) fn with_failover(mut self, failover: Failover) -> Self {
        self.balancer = balance::Balancer::new(failover.balance);
        self.ejection = ejection_of(&failover, self.timeout);
        if let Some(check) = &failover.health_check {
            health_check::start(
                self.service.clone(),
                Arc::downgrade(&self.backends),
                check.clone(),
                self.tls.clone(),
            );
        }
        self.failover = failover;
        let (protocol, connections) = self.protocol;
        self.with_upstream_protocol(protocol, connections)
    }

    /// The gateway's backends (for `/metrics` and readiness).
    pub(crate) fn backends(&self) -> &Arc<Backends> {
        &self.backends
    }

    /// Keeps the backend's WSDL and the documents it imports for `wsdl_cache` (if any: how long,
    /// and how many documents at most) and compresses requests from
    /// `compress_from` bytes on (if any).
    pub(crate) fn with_tuning(
        mut self,
        wsdl_cache: Option<(Duration, usize)>,
        compress_from: Option<usize>,
    ) -> Self {
        self.wsdl_cache = wsdl_cache.map(|(keep, max_docs)| WsdlCache {
            keep,
            max_docs: max_docs.max(1),
            docs: std::sync::Mutex::new(HashMap::new()),
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
        let backends = self.backends.snapshot();
        let Some(&index) = self.balancer.order(&backends, 1).first() else {
            return Ok(None);
        };
        let upstream = &backends[index].upstream;
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
        let label = self.label(index, backends.len(), &upstream.url);
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
                *response.headers_mut() = self.policy.filter(passed);
                Ok(Some(response))
            }
        }
    }

    /// Forwards a SOAP request with the client's `headers` (see [`forwarding`] for which go
    /// on), as it arrived (`arrival`, `None` for requests lather makes itself). The
    /// backend's status, content type and body (faults included) pass through. When every
    /// backend refuses the connection the answer is an `UpstreamUnavailable` fault (503); a
    /// backend that fails after accepting gives `UpstreamFailed` (502); no answer within the
    /// timeout gives `UpstreamTimeout` (504).
    pub(crate) async fn forward(
        &self,
        headers: &HeaderMap,
        body: Bytes,
        identity: Option<&Identity>,
        arrival: Option<&Arrival>,
        operation: Option<&str>,
    ) -> Result<Passed, Fault> {
        let identity = identity.and_then(|id| HeaderValue::from_str(id.name()).ok());
        let mut outgoing = forwarding::outgoing(
            headers,
            arrival,
            &self.rules,
            self.identity_header.as_ref(),
            identity,
        );
        let compressed = self
            .compress_from
            .filter(|min| body.len() >= *min)
            .and_then(|_| crate::compress::gzip(&body));
        let body = match compressed {
            Some(gzipped) => {
                outgoing.insert(&header::CONTENT_ENCODING, &HeaderValue::from_static("gzip"));
                Bytes::from(gzipped)
            }
            None => body,
        };
        let may_resend = self.failover.idempotent.allows(operation);
        let below = arrival.and_then(|a| a.below_prefix.as_ref());
        let (_, _, response) = self
            .first_answer(may_resend, outgoing, |upstream| {
                let uri = match below {
                    Some((rest, query)) => below_prefix(&upstream.uri, rest, query.as_deref()),
                    None => upstream.uri.clone(),
                };
                (Method::POST, uri, body.clone())
            })
            .await?;
        Ok(response)
    }

    /// The backend's `document` with its endpoint addresses rewritten to `endpoint` and
    /// its imports on the backend's origin to links at `base` (`?wsdl=…`, `?xsd=…`); from
    /// the cache when it was fetched less than `wsdl_cache_ms` ago.
    pub(crate) async fn document(
        &self,
        document: &Document,
        endpoint: &str,
        base: &str,
    ) -> Result<Passed, Fault> {
        let key = document.key();
        let cached = self.wsdl_cache.as_ref().and_then(|cache| {
            let docs = cache.docs.lock().unwrap_or_else(|p| p.into_inner());
            docs.get(&key)
                .filter(|(at, _, _)| at.elapsed() < cache.keep)
                .map(|(_, uri, answer)| (uri.clone(), answer.clone()))
        });
        let (uri, response) = match cached {
            Some(found) => found,
            None => {
                let (uri, answer) = self.fetch_document(document).await?;
                if let Some(cache) = &self.wsdl_cache {
                    let mut docs = cache.docs.lock().unwrap_or_else(|p| p.into_inner());
                    if docs.len() >= cache.max_docs {
                        docs.retain(|_, (at, _, _)| at.elapsed() < cache.keep);
                    }
                    if docs.len() >= cache.max_docs
                        && let Some(oldest) = docs
                            .iter()
                            .min_by_key(|(_, (at, _, _))| *at)
                            .map(|(k, _)| k.clone())
                    {
                        docs.remove(&oldest);
                    }
                    docs.insert(key, (Instant::now(), uri.clone(), answer.clone()));
                }
                (uri, answer)
            }
        };
        let (parts, body) = response.into_parts();
        // Checked UTF-8 when fetched.
        let text = String::from_utf8_lossy(&body);
        let rewritten = wsdl::rewrite(&text, endpoint, |kind, location| {
            resource::on_origin(&uri, location).map(|path| resource::link(base, kind, &path))
        });
        Ok(Response::from_parts(parts, Bytes::from(rewritten)))
    }

    /// The backend's `document` as it answered it, and where it was fetched: 200, UTF-8
    /// and XML, or a fault.
    async fn fetch_document(&self, document: &Document) -> Result<(Uri, Passed), Fault> {
        // Shared by every client (and cached): none of a client's headers go with it.
        let headers = forwarding::outgoing(
            &HeaderMap::new(),
            None,
            &self.rules,
            self.identity_header.as_ref(),
            None,
        );
        let what = match document {
            Document::Wsdl { .. } => "WSDL",
            Document::Imported(_) => "imported document",
        };
        // Asking for a document again elsewhere changes nothing at the backends.
        let (backend, (index, of), response) = self
            .first_answer(true, headers, |upstream| {
                (Method::GET, document.on(&upstream.uri), Bytes::new())
            })
            .await?;
        let label = self.label(index, of, &backend.upstream.url);
        let uri = document.on(&backend.upstream.uri);
        if response.status() != StatusCode::OK {
            tracing::warn!(service = %self.service, url = %uri, status = %response.status(), "backend {what} request failed");
            let fault = match document {
                Document::Imported(_) if response.status() == StatusCode::NOT_FOUND => {
                    FaultKind::NoSuchService
                }
                _ => FaultKind::UpstreamFailed,
            };
            return Err(Fault::with_reason(
                fault,
                format!("{label}'s {what} answered {}", response.status()),
            ));
        }
        let Ok(text) = std::str::from_utf8(response.body()) else {
            tracing::warn!(service = %self.service, url = %uri, "backend {what} is not UTF-8");
            return Err(Fault::with_reason(
                FaultKind::UpstreamFailed,
                format!("{label}'s {what} is not UTF-8"),
            ));
        };
        if !text
            .trim_start_matches('\u{feff}')
            .trim_start()
            .starts_with('<')
        {
            tracing::warn!(service = %self.service, url = %uri, "backend {what} is not XML");
            return Err(Fault::with_reason(
                FaultKind::UpstreamFailed,
                format!("{label}'s {what} is not XML"),
            ));
        }
        Ok((uri, response))
    }

    /// Sends the request `make` names (method, URI, body) with `headers` to the backends
    /// in the balancer's order until one answers: a backend that refuses or does not open
    /// a connection in time is skipped for the next; one that fails or does not answer
    /// after the request was sent too, when `may_resend`. Its backend, place (index, of how
    /// many) and answer, or the fault of the last failure.
    async fn first_answer(
        &self,
        may_resend: bool,
        mut headers: HeaderList,
        make: impl Fn(&lather_config::Upstream) -> (Method, Uri, Bytes),
    ) -> Result<(Arc<Backend>, (usize, usize), Passed), Fault> {
        let deadline = Instant::now() + self.timeout;
        let backends = self.backends.snapshot();
        if backends.is_empty() {
            return Err(Fault::with_reason(
                FaultKind::UpstreamUnavailable,
                self.backends.none_why(),
            ));
        }
        let order = self.balancer.order(&backends, self.failover.max_attempts);
        let mut failures = Vec::new();
        let mut last = None;
        for (tried, index) in order.iter().enumerate() {
            let backend = &backends[*index];
            let more = tried + 1 < order.len();
            let try_deadline = match self.failover.try_timeout {
                Some(t) if may_resend && more => deadline.min(Instant::now() + t),
                _ => deadline,
            };
            // The last try takes the headers; one with more after it takes a copy.
            let these = if more {
                headers.clone()
            } else {
                std::mem::take(&mut headers)
            };
            let (method, uri, body) = make(&backend.upstream);
            let request = UpstreamRequest {
                method,
                uri,
                headers: these,
                body,
            };
            let failure = match self.attempt(backend, request, try_deadline).await {
                Ok(response) => return Ok((backend.clone(), (*index, backends.len()), response)),
                Err(failure) => failure,
            };
            backend.failed(failure.kind, &self.ejection);
            let label = self.label(*index, backends.len(), &backend.upstream.url);
            let stop = Instant::now() >= deadline
                || (failure.sent() && !may_resend)
                || failure.kind == FailureKind::Tls;
            failures.push(self.described(&label, &failure));
            last = Some((label, failure));
            if stop {
                break;
            }
        }
        let Some((label, failure)) = last else {
            return Err(Fault::with_reason(
                FaultKind::UpstreamUnavailable,
                self.backends.none_why(),
            ));
        };
        Err(match failure.kind {
            FailureKind::Tls => Fault::with_reason(
                FaultKind::UpstreamFailed,
                failures.pop().unwrap_or_default(),
            ),
            FailureKind::Timeout if Instant::now() >= deadline => Fault::with_reason(
                FaultKind::UpstreamTimeout,
                format!(
                    "{label} did not answer within {} ms",
                    self.timeout.as_millis()
                ),
            ),
            _ if failures.len() == 1 && failure.sent() => {
                let kind = if failure.kind == FailureKind::Timeout {
                    FaultKind::UpstreamTimeout
                } else {
                    FaultKind::UpstreamFailed
                };
                Fault::with_reason(kind, failures.remove(0))
            }
            _ if failure.sent() => Fault::with_reason(
                FaultKind::UpstreamFailed,
                format!("no upstream answered: {}", failures.join(", ")),
            ),
            _ => Fault::with_reason(
                FaultKind::UpstreamUnavailable,
                format!("no upstream accepted a connection: {}", failures.join(", ")),
            ),
        })
    }

    /// How a client-facing fault tells of `failure` at the backend labelled `label`.
    fn described(&self, label: &str, failure: &Failure) -> String {
        if self.failover.expose_backend_errors {
            format!("{label}: {} ({})", failure.what, failure.detail)
        } else if failure.kind == FailureKind::Tls {
            format!("{label}: {}", failure.what)
        } else if failure.sent() {
            format!("{label} {}", failure.what)
        } else {
            format!("{label} ({})", failure.what)
        }
    }

    /// How a client-facing fault names backend `index` of `n`: "backend 2 of 3", and its
    /// URL too when `expose_backend_errors` is on.
    fn label(&self, index: usize, n: usize, url: &str) -> String {
        if self.failover.expose_backend_errors {
            format!("backend {} of {n} ({url})", index + 1)
        } else {
            format!("backend {} of {n}", index + 1)
        }
    }

    /// One try at `backend`, answered by `deadline`.
    async fn attempt(
        &self,
        backend: &Backend,
        mut request: UpstreamRequest,
        deadline: Instant,
    ) -> Result<Passed, Failure> {
        let span = crate::request_span::upstream(&self.service, &backend.upstream.url);
        if span.is_none() {
            return self.attempt_untraced(backend, request, deadline).await;
        }
        if let Some(traceparent) = crate::request_span::traceparent(&span) {
            request
                .headers
                .insert(&crate::request_span::TRACEPARENT, &traceparent);
        }
        let result = tracing::Instrument::instrument(
            self.attempt_untraced(backend, request, deadline),
            span.clone(),
        )
        .await;
        let status = result.as_ref().map(|r| r.status()).map_err(|f| &f.what);
        crate::request_span::upstream_result(&span, status);
        result
    }

    /// [`Self::attempt`] without its span.
    async fn attempt_untraced(
        &self,
        backend: &Backend,
        request: UpstreamRequest,
        deadline: Instant,
    ) -> Result<Passed, Failure> {
        let upstream = &backend.upstream;
        let _in_flight = backend.begin(&self.ejection);
        let started = Instant::now();
        let timed_out = || {
            let waited = deadline.saturating_duration_since(started).as_millis() as u64;
            tracing::warn!(service = %self.service, upstream = %upstream.url, waited_ms = waited, "backend did not answer in time");
            Failure {
                kind: FailureKind::Timeout,
                what: format!("did not answer within {waited} ms"),
                detail: "timed out".to_owned(),
            }
        };
        // One timer for the wait for a connection slot and the exchange.
        let exchanged = tokio::time::timeout_at(deadline.into(), async {
            let _held = self.client.hold(&upstream.url, &backend.budget).await;
            self.client
                .exchange(request, self.max_response_bytes, &self.policy)
                .await
        })
        .await;
        // Made anew by the client: the backend's status, headers (its policy applied) and
        // body only.
        let mut response = match exchanged {
            Err(_) => return Err(timed_out()),
            Ok(Err(unanswered)) => return Err(self.unanswered(upstream, unanswered)),
            Ok(Ok(response)) => response,
        };
        backend.answered(started.elapsed());
        // For the access log (which operators read; clients never see it).
        if self.name_upstream {
            response
                .extensions_mut()
                .insert(crate::access::UpstreamUsed(upstream.url.clone()));
        }
        Ok(response)
    }
}

impl Gateway {
    /// The failure of a try at `upstream` that got no answer, logged at warn.
    fn unanswered(&self, upstream: &lather_config::Upstream, unanswered: Unanswered) -> Failure {
        let refused = |what: String, detail: String| {
            tracing::warn!(service = %self.service, upstream = %upstream.url, error = %detail, "backend refused the connection");
            let kind = if what == std::io::ErrorKind::TimedOut.to_string() {
                FailureKind::ConnectTimeout
            } else {
                FailureKind::Refused
            };
            Failure { kind, what, detail }
        };
        let failed = |what: String, detail: String| {
            tracing::warn!(service = %self.service, upstream = %upstream.url, error = %detail, "backend failed");
            Failure {
                kind: FailureKind::Failed,
                what,
                detail,
            }
        };
        let unreadable = |why: String| {
            tracing::warn!(service = %self.service, upstream = %upstream.url, error = %why, "reading the backend's answer failed");
            Failure {
                kind: FailureKind::Failed,
                what: format!(
                    "answer could not be read: {why} (limit {} bytes)",
                    self.max_response_bytes
                ),
                detail: why,
            }
        };
        match unanswered {
            Unanswered::Sending(e) if tls_failure::find(&e).is_some() => {
                let why = tls_failure::find(&e).map(tls_failure::describe);
                let detail = error_chain(&e);
                tracing::warn!(service = %self.service, upstream = %upstream.url, error = %detail, "TLS with the backend failed");
                Failure {
                    kind: FailureKind::Tls,
                    what: why.unwrap_or_default(),
                    detail,
                }
            }
            Unanswered::Sending(e) if e.is_connect() => refused(io_kind(&e), error_chain(&e)),
            Unanswered::Sending(e) => failed(format!("failed: {}", io_kind(&e)), error_chain(&e)),
            Unanswered::Reading(why) => unreadable(why),
            Unanswered::Direct(DirectError::Connect(e)) => {
                refused(e.kind().to_string(), format!("tcp connect error: {e}"))
            }
            Unanswered::Direct(e @ DirectError::ConnectTimeout(_)) => {
                refused(std::io::ErrorKind::TimedOut.to_string(), e.to_string())
            }
            Unanswered::Direct(DirectError::Write(e)) => failed(
                format!("failed: {}", e.kind()),
                format!("writing the request: {e}"),
            ),
            Unanswered::Direct(DirectError::Answer(e @ AnswerError::TooLarge { .. })) => {
                unreadable(e.to_string())
            }
            Unanswered::Direct(DirectError::Answer(e)) => {
                failed(format!("failed: {}", e.kind_text()), e.to_string())
            }
        }
    }
}

impl SoapService for Gateway {
    fn call<'a>(&'a self, request: ServiceRequest<'a>) -> ServiceFuture<'a> {
        Box::pin(async move {
            let identity = request.context.properties.get::<Identity>();
            let arrival = request.context.properties.get::<Arrival>();
            // Streams and batches carry no path: a request below a prefix goes alone.
            let below = arrival.is_some_and(|a| a.below_prefix.is_some());
            if !below
                && let Some(sender) = &self.streams
                && let Some(answer) = self
                    .over_stream(sender, request.headers, &request.envelope, identity)
                    .await?
            {
                return Ok(Reply::Http(answer));
            }
            if !below && let Some(batches) = self.batching() {
                let answer = self
                    .batched(batches, request.headers, &request.envelope)
                    .await?;
                return Ok(Reply::Http(answer));
            }
            let body = request.envelope.as_bytes().clone();
            let operation = request.envelope.operation().map(|op| op.local());
            let answer = self
                .forward(request.headers, body, identity, arrival, operation)
                .await?;
            Ok(Reply::Http(answer))
        })
    }

    fn wsdl<'a>(&'a self, location: &'a str) -> ServiceFuture<'a> {
        Box::pin(async move {
            let root = Document::Wsdl { below: None };
            Ok(Reply::Http(self.document(&root, location, location).await?))
        })
    }

    fn is_ultimate_receiver(&self) -> bool {
        false
    }

    /// Not ready while there is no backend to forward to (none registered yet), or while
    /// every backend is ejected or down by its health checks.
    fn ready(&self) -> Ready {
        let backends = self.backends.snapshot();
        let now = Instant::now();
        if backends.is_empty() {
            Ready::No("no backend".into())
        } else if backends.iter().all(|b| b.standing(now) != Standing::Up) {
            Ready::No("every backend ejected or down".into())
        } else {
            Ready::Yes
        }
    }
}

/// `uri` with its query replaced by `query`.
fn with_query(uri: &Uri, query: &str) -> Uri {
    let mut parts = uri.clone().into_parts();
    let path = uri.path();
    parts.path_and_query = format!("{path}?{query}").parse().ok();
    Uri::from_parts(parts).unwrap_or_else(|_| uri.clone())
}

/// `upstream` with `rest` (a request's path below a service's prefix) appended to its
/// path, and `query` (the request's) replacing its query when given.
fn below_prefix(upstream: &Uri, rest: &str, query: Option<&str>) -> Uri {
    let mut path = upstream.path().trim_end_matches('/').to_owned();
    path.push_str(rest);
    if path.is_empty() {
        path.push('/');
    }
    if let Some(query) = query.or(upstream.query()) {
        path.push('?');
        path.push_str(query);
    }
    let mut parts = upstream.clone().into_parts();
    parts.path_and_query = path.parse().ok();
    Uri::from_parts(parts).unwrap_or_else(|_| upstream.clone())
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

/// The ejection rules of `failover`; a trial request after a cool-down is alone for at
/// most the request `timeout`.
fn ejection_of(failover: &Failover, timeout: Duration) -> Ejection {
    Ejection {
        after: failover.eject_after,
        cool_down: failover.eject_for,
        trial: timeout,
    }
}
