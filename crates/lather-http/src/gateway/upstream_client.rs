//! The gateway's HTTP client towards its upstreams: HTTP/1.1 over a pool with a
//! per-upstream connection budget, or HTTP/2 (h2c) over a fixed number of connections per
//! upstream that carry many requests at once.

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::{Client, Error as ClientError};
use hyper_util::rt::TokioExecutor;
use lather_config::UpstreamProtocol;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

type HttpClient = Client<HttpConnector, Full<Bytes>>;

/// How requests reach the upstreams.
#[derive(Debug)]
pub(crate) enum UpstreamClient {
    /// HTTP/1.1: one pool; each upstream has `budget` connections (one request each) at most.
    Http1 {
        client: Box<HttpClient>,
        budget: usize,
        permits: RwLock<HashMap<String, Arc<Semaphore>>>,
    },
    /// h2c: `clients.len()` connections to each upstream, one per client, taken in turn.
    H2c {
        clients: Vec<HttpClient>,
        next: AtomicUsize,
    },
}

/// What a request holds while its answer is read: for HTTP/1.1 the connection's place in
/// the budget.
#[derive(Debug)]
pub(crate) struct Held {
    _permit: Option<OwnedSemaphorePermit>,
}

impl UpstreamClient {
    /// A client speaking `protocol` with at most `connections` connections to each
    /// upstream, each connecting within `timeout`.
    pub(crate) fn new(protocol: UpstreamProtocol, connections: usize, timeout: Duration) -> Self {
        let connections = connections.max(1);
        let build = |http2: bool| {
            let mut connector = HttpConnector::new();
            connector.set_nodelay(true);
            connector.set_connect_timeout(Some(timeout));
            let mut builder = Client::builder(TokioExecutor::new());
            builder.pool_idle_timeout(Duration::from_secs(90));
            if http2 {
                builder
                    .http2_only(true)
                    .timer(hyper_util::rt::TokioTimer::new())
                    .http2_keep_alive_interval(Duration::from_secs(30))
                    .http2_adaptive_window(true);
            } else {
                builder.pool_max_idle_per_host(connections);
            }
            builder.build(connector)
        };
        match protocol {
            UpstreamProtocol::Http1 => UpstreamClient::Http1 {
                client: Box::new(build(false)),
                budget: connections,
                permits: RwLock::new(HashMap::new()),
            },
            UpstreamProtocol::H2c => UpstreamClient::H2c {
                clients: (0..connections).map(|_| build(true)).collect(),
                next: AtomicUsize::new(0),
            },
        }
    }

    /// Waits for a place in `upstream`'s budget (HTTP/1.1), to be held until the answer
    /// has been read; h2c needs none.
    pub(crate) async fn hold(&self, upstream: &str) -> Held {
        let UpstreamClient::Http1 {
            budget, permits, ..
        } = self
        else {
            return Held { _permit: None };
        };
        let known = permits
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(upstream)
            .cloned();
        let semaphore = match known {
            Some(s) => s,
            None => permits
                .write()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .entry(upstream.to_owned())
                .or_insert_with(|| Arc::new(Semaphore::new(*budget)))
                .clone(),
        };
        // The semaphore is never closed.
        Held {
            _permit: semaphore.acquire_owned().await.ok(),
        }
    }

    /// Sends `request` (its URI absolute).
    pub(crate) async fn send(
        &self,
        request: Request<Full<Bytes>>,
    ) -> Result<Response<Incoming>, ClientError> {
        match self {
            UpstreamClient::Http1 { client, .. } => client.request(request).await,
            UpstreamClient::H2c { clients, next } => {
                let i = next.fetch_add(1, Ordering::Relaxed) % clients.len();
                let mut request = request;
                *request.version_mut() = http::Version::HTTP_2;
                clients[i].request(request).await
            }
        }
    }
}
