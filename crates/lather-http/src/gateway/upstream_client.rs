//! The gateway's HTTP client towards its upstreams: HTTP/1.1 over a pool with a
//! per-upstream connection budget, or HTTP/2 over a fixed number of connections per
//! upstream that carry many requests at once — over plain TCP (`http://`, HTTP/2 with prior
//! knowledge) or TLS (`https://`, HTTP/2 negotiated by ALPN).

use super::direct_h1::{DirectClient, DirectError};
use super::header_list::HeaderList;
use super::headers::ResponsePolicy;
use crate::tls::TlsError;
use bytes::Bytes;
use http::{Method, Request, Response, Uri};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::{Client, Error as ClientError};
use hyper_util::rt::TokioExecutor;
use lather_config::{ServiceConfig, ServiceKind, UpstreamProtocol};
use std::collections::HashMap;
use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock, PoisonError, RwLock};
use std::time::Duration;
use tokio::sync::{Semaphore, SemaphorePermit};

type HttpClient = Client<HttpsConnector<HttpConnector>, Full<Bytes>>;

/// A request to an upstream: its method, absolute URI, headers and whole body.
#[derive(Debug)]
pub(crate) struct UpstreamRequest {
    /// `POST` for a SOAP request, `GET` for a document.
    pub(crate) method: Method,
    /// The upstream's absolute URI.
    pub(crate) uri: Uri,
    /// The headers prepared for it (see `forwarding`).
    pub(crate) headers: HeaderList,
    /// The whole body.
    pub(crate) body: Bytes,
}

impl UpstreamRequest {
    /// The same request for hyper's client.
    fn into_http(self) -> Request<Full<Bytes>> {
        let mut request = Request::new(Full::new(self.body));
        *request.method_mut() = self.method;
        *request.uri_mut() = self.uri;
        *request.headers_mut() = self.headers.into_map();
        request
    }
}

/// How requests reach the upstreams.
#[derive(Debug)]
pub(crate) enum UpstreamClient {
    /// HTTP/1.1: a pool per I/O thread (made when that thread first sends), so an
    /// upstream connection's I/O stays on the thread serving the client. Each upstream has
    /// `budget` requests in flight at most, all threads together (one per connection in
    /// use); each thread's pool keeps up to `budget` idle connections of its own.
    Http1 {
        /// `http://` upstreams: driven on the task serving the client.
        direct: DirectClient,
        /// `https://` upstreams: hyper's client over rustls.
        clients: Box<[OnceLock<HttpClient>]>,
        recipe: Box<Recipe>,
        budget: usize,
        permits: RwLock<HashMap<String, Arc<Semaphore>>>,
    },
    /// HTTP/2: `clients.len()` connections to each upstream, one per client, taken in turn.
    H2 {
        clients: Vec<H2Slot>,
        next: AtomicUsize,
    },
}

/// One HTTP/2 client of a gateway. hyper's client may open a second connection to an
/// upstream when requests arrive while its first is still being set up, so the first
/// request a client sends to an upstream goes alone: the others wait for its answer (or
/// its failure), then share the connection it made. Only the first: were each failure to
/// send the next request alone again, requests to an unreachable upstream would time out
/// one after another instead of together.
#[derive(Debug)]
pub(crate) struct H2Slot {
    client: HttpClient,
    /// The upstreams (by authority) this client has sent a request to, answered or not. A
    /// gateway has a few upstreams: they are compared in turn, not hashed on every request.
    tried: RwLock<Vec<String>>,
    /// Held while the first request to an upstream is on its way.
    first: tokio::sync::Mutex<()>,
}

impl H2Slot {
    fn new(client: HttpClient) -> Self {
        H2Slot {
            client,
            tried: RwLock::new(Vec::new()),
            first: tokio::sync::Mutex::new(()),
        }
    }

    fn was_tried(&self, authority: &str) -> bool {
        self.tried
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .any(|tried| tried == authority)
    }

    /// Sends `request`; alone, if it is the first to its upstream.
    async fn request(
        &self,
        request: Request<Full<Bytes>>,
    ) -> Result<Response<Incoming>, ClientError> {
        // A clone of the URI's shared bytes, not a copy: kept past handing `request` on.
        let authority = request.uri().authority().cloned();
        let authority = authority.as_ref().map_or("", |a| a.as_str());
        if self.was_tried(authority) {
            return self.client.request(request).await;
        }
        let first = self.first.lock().await;
        if self.was_tried(authority) {
            // The first one was answered (or failed) while this one waited.
            drop(first);
            return self.client.request(request).await;
        }
        let answer = self.client.request(request).await;
        self.tried
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .push(authority.to_owned());
        answer
    }
}

/// The TLS settings of a gateway's client: the rustls configuration (roots, client
/// certificate) and the server name override.
#[derive(Debug, Clone)]
pub(crate) struct UpstreamTls {
    pub(crate) config: Arc<rustls::ClientConfig>,
    pub(crate) server_name: Option<rustls::pki_types::ServerName<'static>>,
}

impl UpstreamTls {
    /// The TLS settings of gateway `svc`: from its `upstream_*` keys when it may have an
    /// `https://` upstream (one in its list, or a registry's), else a configuration that
    /// is never used. An error comes with the span of the key naming the file.
    pub(crate) fn of(svc: &ServiceConfig) -> Result<Self, (Range<usize>, TlsError)> {
        let may_use = match svc.kind() {
            ServiceKind::Gateway(list) => list.iter().any(|u| u.uri.scheme_str() == Some("https")),
            _ => true,
        };
        let settings = svc.upstream_tls();
        let config = crate::tls::upstream::client_config(&settings, may_use).map_err(|e| {
            let span = match e.key() {
                "upstream_ca_file" => svc.upstream_ca_file.as_ref(),
                "upstream_client_cert_file" => svc.upstream_client_cert_file.as_ref(),
                "upstream_client_key_file" => svc.upstream_client_key_file.as_ref(),
                _ => None,
            }
            .map_or_else(|| svc.path.span(), |v| v.span());
            (span, e)
        })?;
        // Checked when the configuration was read.
        let server_name = settings
            .server_name
            .and_then(|name| rustls::pki_types::ServerName::try_from(name).ok());
        Ok(UpstreamTls {
            config: Arc::new(config),
            server_name,
        })
    }

    /// The same settings for lather's own clients (the message stream sender).
    pub(crate) fn outbound(&self) -> lather_client::OutboundTls {
        let tls = lather_client::OutboundTls::from_client_config(self.config.clone());
        match &self.server_name {
            Some(name) => tls.with_server_name(name.clone()),
            None => tls,
        }
    }
}

/// Why [`UpstreamClient::exchange`] got no answer.
#[derive(Debug)]
pub(crate) enum Unanswered {
    /// hyper's client failed to send or to read the head.
    Sending(ClientError),
    /// hyper's client failed to read the body (or it was over the limit).
    Reading(String),
    /// The direct HTTP/1.1 exchange failed.
    Direct(DirectError),
}

/// What a request holds while its answer is read: for HTTP/1.1 the connection's place in
/// the budget.
#[derive(Debug)]
pub(crate) struct Held<'a> {
    _permit: Option<SemaphorePermit<'a>>,
}

/// An upstream's budget as a backend keeps it: looked up in the client's table on the
/// backend's first request (a hash of its URL on every request cost more than the wait
/// for a place), `None` where the client has no budget (HTTP/2).
pub(crate) type BudgetSlot = OnceLock<Option<Arc<Semaphore>>>;

/// Most I/O threads with a pool of their own; beyond, threads share them.
const POOLS: usize = 64;

/// How the gateway's HTTP clients are made: connection budget, connect timeout, TLS.
#[derive(Debug)]
pub(crate) struct Recipe {
    connections: usize,
    timeout: Duration,
    tls: UpstreamTls,
}

impl Recipe {
    /// A client over HTTP/2 (`http2`) or HTTP/1.1.
    fn build(&self, http2: bool) -> HttpClient {
        let mut tcp = HttpConnector::new();
        tcp.set_nodelay(true);
        tcp.set_connect_timeout(Some(self.timeout));
        tcp.enforce_http(false);
        let tls = &self.tls;
        let schemes = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config((*tls.config).clone())
            .https_or_http();
        let schemes = match &tls.server_name {
            Some(name) => schemes.with_server_name_resolver(
                hyper_rustls::FixedServerNameResolver::new(name.clone()),
            ),
            None => schemes,
        };
        let connector = if http2 {
            schemes.enable_http2().wrap_connector(tcp)
        } else {
            schemes.enable_http1().wrap_connector(tcp)
        };
        let mut builder = Client::builder(TokioExecutor::new());
        builder.pool_idle_timeout(Duration::from_secs(90));
        if http2 {
            builder
                .http2_only(true)
                .timer(hyper_util::rt::TokioTimer::new())
                .http2_keep_alive_interval(Duration::from_secs(30))
                .http2_adaptive_window(true);
        } else {
            builder.pool_max_idle_per_host(self.connections);
        }
        builder.build(connector)
    }
}

impl UpstreamClient {
    /// A client speaking `protocol` with at most `connections` connections to each
    /// upstream, each connecting within `timeout`; `https://` upstreams with `tls`
    /// (ALPN offering only the protocol's own: `http/1.1` or `h2`).
    pub(crate) fn new(
        protocol: UpstreamProtocol,
        connections: usize,
        timeout: Duration,
        tls: UpstreamTls,
    ) -> Self {
        let connections = connections.max(1);
        let recipe = Recipe {
            connections,
            timeout,
            tls,
        };
        match protocol {
            UpstreamProtocol::Http1 => UpstreamClient::Http1 {
                direct: DirectClient::new(POOLS, connections, timeout),
                clients: (0..POOLS).map(|_| OnceLock::new()).collect(),
                recipe: Box::new(recipe),
                budget: connections,
                permits: RwLock::new(HashMap::new()),
            },
            UpstreamProtocol::H2 => UpstreamClient::H2 {
                clients: (0..connections)
                    .map(|_| H2Slot::new(recipe.build(true)))
                    .collect(),
                next: AtomicUsize::new(0),
            },
        }
    }

    /// Waits for a place in `upstream`'s budget (HTTP/1.1), to be held until the answer
    /// has been read; HTTP/2 needs none. `slot` is the backend's: the budget is looked up
    /// by `upstream` once, then kept there.
    pub(crate) async fn hold<'a>(&self, upstream: &str, slot: &'a BudgetSlot) -> Held<'a> {
        let budget = slot.get_or_init(|| self.budget_of(upstream));
        let _permit = match budget {
            // The semaphore is never closed.
            Some(semaphore) => semaphore.acquire().await.ok(),
            None => None,
        };
        Held { _permit }
    }

    /// `upstream`'s budget, the same for every backend with that URL (a registry's
    /// backend that goes and comes back gets its old one); `None` for HTTP/2.
    fn budget_of(&self, upstream: &str) -> Option<Arc<Semaphore>> {
        let UpstreamClient::Http1 {
            budget, permits, ..
        } = self
        else {
            return None;
        };
        let known = permits
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(upstream)
            .cloned();
        Some(match known {
            Some(s) => s,
            None => permits
                .write()
                .unwrap_or_else(PoisonError::into_inner)
                .entry(upstream.to_owned())
                .or_insert_with(|| Arc::new(Semaphore::new(*budget)))
                .clone(),
        })
    }

    /// Sends `request` (its URI absolute) and reads its whole answer, the body at most
    /// `limit` bytes: over HTTP/1.1 to an `http://` upstream on this task
    /// ([`DirectClient`]), else through hyper's client. The answer is made anew: its
    /// status, its end-to-end headers with `policy` applied (the direct client reads the
    /// others into its framing facts, and leaves out the policy's removals as it reads)
    /// and its body; nothing else of the backend's response (hyper's extensions) is kept.
    pub(crate) async fn exchange(
        &self,
        request: UpstreamRequest,
        limit: usize,
        policy: &ResponsePolicy,
    ) -> Result<Response<Bytes>, Unanswered> {
        if let UpstreamClient::Http1 { direct, .. } = self
            && request.uri.scheme() == Some(&http::uri::Scheme::HTTP)
        {
            let answer = direct
                .exchange(request, limit, &policy.remove)
                .await
                .map_err(Unanswered::Direct)?;
            let mut response = Response::new(answer.body);
            *response.status_mut() = answer.status;
            *response.headers_mut() = policy.set_and_add(answer.headers);
            return Ok(response);
        }
        let response = self
            .send(request.into_http())
            .await
            .map_err(Unanswered::Sending)?;
        let (parts, body) = response.into_parts();
        let body = Limited::new(body, limit)
            .collect()
            .await
            .map_err(|e| Unanswered::Reading(e.to_string()))?
            .to_bytes();
        let mut answer = Response::new(body);
        *answer.status_mut() = parts.status;
        *answer.headers_mut() = policy.filter(parts.headers);
        Ok(answer)
    }

    /// Sends `request` (its URI absolute) through hyper's client.
    pub(crate) async fn send(
        &self,
        request: Request<Full<Bytes>>,
    ) -> Result<Response<Incoming>, ClientError> {
        match self {
            UpstreamClient::Http1 {
                clients, recipe, ..
            } => {
                let pool = &clients[crate::io_thread::current() % clients.len()];
                pool.get_or_init(|| recipe.build(false))
                    .request(request)
                    .await
            }
            UpstreamClient::H2 { clients, next } => {
                let i = next.fetch_add(1, Ordering::Relaxed) % clients.len();
                let mut request = request;
                *request.version_mut() = http::Version::HTTP_2;
                clients[i].request(request).await
            }
        }
    }
}
