//! The listener: accepts connections, serves HTTP/1.1 (keep-alive) and h2c — or, with
//! `[server.tls]`, HTTPS (HTTP/1.1 or HTTP/2 by ALPN) — and shuts down gracefully.
//! Connections are capped in all and per client address, and closed when idle; a TLS
//! handshake happens in the connection's own task, within `header_timeout_ms`.

use crate::ServeError;
use crate::accept::AcceptErrors;
use crate::conn_cap::ConnectionCaps;
use crate::dispatch;
use crate::idle::{Activity, Busy};
use crate::peer::Peer;
use crate::state::State;
use crate::tls::stream::MaybeTls;
use crate::watched::Watched;
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use lather_config::ServerConfig;
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};

/// A bound lather server: build it with [`Server::builder`] (services in code) or
/// [`Server::from_config`] (a TOML configuration), then [`Server::serve`] it until shutdown.
///
/// ```no_run
/// # async fn run() -> Result<(), lather_http::ServeError> {
/// let server = lather_http::Server::builder()
///     .listen("127.0.0.1:8080".parse().unwrap())
///     .service("/echo", lather_http::Echo)
///     .bind()
///     .await?;
/// println!("listening on {}", server.local_addr());
/// server.serve(async { let _ = tokio::signal::ctrl_c().await; }).await
/// # }
/// ```
#[derive(Debug)]
pub struct Server {
    listener: TcpListener,
    /// The state the server started with (its long-running tasks keep it).
    state: Arc<State>,
    /// The state requests are served with, replaced by a reload.
    current: Arc<crate::current::CurrentState>,
    /// What a reload needs besides the new configuration.
    reloader: Option<crate::reload::Reloader>,
    grace: Duration,
    caps: Arc<ConnectionCaps>,
    idle: Duration,
    header_timeout: Duration,
    /// The `[stream]` listener and its acceptor, when configured.
    streams: Option<(TcpListener, Arc<crate::stream_acceptor::StreamAcceptor>)>,
    /// TLS on the listener (`[server.tls]`), when configured.
    tls: Option<Box<crate::tls::listener::ListenerTls>>,
}

impl Server {
    pub(crate) fn new(listener: TcpListener, state: State, server: &ServerConfig) -> Server {
        let max_connections = crate::fd_limit::fit(server.max_connections);
        let state = Arc::new(state);
        Server {
            listener,
            current: Arc::new(crate::current::CurrentState::new(state.clone())),
            reloader: None,
            state,
            grace: Duration::from_millis(server.shutdown_grace_ms),
            caps: ConnectionCaps::new(max_connections, server.max_connections_per_client),
            idle: Duration::from_millis(server.idle_timeout_ms),
            header_timeout: Duration::from_millis(server.header_timeout_ms),
            streams: None,
            tls: None,
        }
    }

    pub(crate) fn with_tls(
        mut self,
        tls: Option<Box<crate::tls::listener::ListenerTls>>,
    ) -> Server {
        self.tls = tls;
        self
    }

    /// `"https"` when the listener speaks TLS, else `"http"`: the scheme of the URLs it
    /// is reached at.
    pub fn scheme(&self) -> &'static str {
        self.state.scheme.as_str()
    }

    pub(crate) fn with_streams(
        mut self,
        streams: Option<(TcpListener, Arc<crate::stream_acceptor::StreamAcceptor>)>,
    ) -> Server {
        self.streams = streams;
        self
    }

    /// Reloads with `parts` (services, composer and settings the server was built from).
    pub(crate) fn with_reload(mut self, parts: crate::reload::ReloadParts) -> Server {
        self.reloader = Some(crate::reload::Reloader::new(self.current.clone(), parts));
        self
    }

    /// A handle that replaces the services, handlers and upstreams of this server with a
    /// new configuration's while it serves ([`Reloader::reload`](crate::Reloader::reload)).
    /// `None` for a server built without a configuration.
    pub fn reloader(&self) -> Option<crate::Reloader> {
        self.reloader.clone()
    }

    /// Starts the worker of every service with asynchronous replies (once: the worker
    /// takes the service's queue).
    fn start_async_workers(&self, stopping: &tokio::sync::watch::Receiver<bool>) {
        for service in self.state.unique_services() {
            let Some(replies) = &service.async_replies else {
                continue;
            };
            let jobs = service
                .async_jobs
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .take();
            if let Some(jobs) = jobs {
                tokio::spawn(crate::async_worker::run(
                    self.state.clone(),
                    service.clone(),
                    replies.clone(),
                    jobs,
                    stopping.clone(),
                ));
            } else if replies.shared_jobs().is_some() {
                tokio::spawn(crate::async_worker::run_shared(
                    self.state.clone(),
                    service.clone(),
                    replies.clone(),
                    stopping.clone(),
                ));
            }
        }
    }

    /// The port message streams are accepted on, when `[stream]` is configured.
    pub fn stream_port(&self) -> Option<u16> {
        self.streams.as_ref().map(|(_, acceptor)| acceptor.port())
    }

    /// The address actually bound (useful with port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.state.listen
    }

    /// Serves until `shutdown` completes; then stops accepting, lets requests in flight
    /// finish (up to the configured grace period) and returns.
    pub async fn serve(mut self, shutdown: impl Future<Output = ()>) -> Result<(), ServeError> {
        if let Some((listener, acceptor)) = self.streams.take() {
            let stopping = acceptor.stopping();
            tokio::spawn(crate::stream_accept::run(
                listener,
                self.state.clone(),
                acceptor,
                stopping,
            ));
        }
        let (stop_workers, workers_stopping) = tokio::sync::watch::channel(false);
        self.start_async_workers(&workers_stopping);
        let (stop_offers, offers_stopping) = tokio::sync::watch::channel(false);
        let offers = tokio::spawn(crate::offers_task::run(self.state.clone(), offers_stopping));
        let graceful = GracefulShutdown::new();
        let mut builder = auto::Builder::new(TokioExecutor::new());
        builder
            .http1()
            .timer(TokioTimer::new())
            .header_read_timeout(self.header_timeout)
            .keep_alive(true);
        builder.http2().timer(TokioTimer::new());
        if let Some(tls) = &mut self.tls {
            tls.start_reloading();
        }
        let mut accept_errors = AcceptErrors::new();
        let metrics = &self.state.metrics.connections;
        let mut shutdown = std::pin::pin!(shutdown);
        loop {
            let accepted = tokio::select! {
                accepted = self.listener.accept() => accepted,
                () = &mut shutdown => break,
            };
            let (stream, peer) = match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    accept_errors.failed(&e, &self.listener, metrics).await;
                    continue;
                }
            };
            let slot = match self.caps.admit(peer.ip()) {
                Ok(slot) => slot,
                Err(refusal) => {
                    // Closed at once: the client sees the connection end, not a hang.
                    metrics.refused(refusal.key());
                    tracing::debug!(%peer, cap = refusal.key(), "connection refused");
                    continue;
                }
            };
            let _ = stream.set_nodelay(true);
            let connection = Connection {
                state: self.state.clone(),
                current: self.current.clone(),
                peer,
                activity: Activity::new(),
                builder: builder.clone(),
                watcher: graceful.watcher(),
                tls: self.tls.as_ref().map(|tls| tls.acceptor()),
                header_timeout: self.header_timeout,
                idle: self.idle,
            };
            let open = metrics.opened();
            tokio::spawn(async move {
                let _slot = (slot, open);
                connection.run(stream).await;
            });
        }
        drop(self.listener);
        self.state.readiness.stop();
        // Stream connections stop reading and answer what they hold, like HTTP ones.
        let streams = self.state.streams.clone();
        if let Some(acceptor) = &streams {
            acceptor.stop();
        }
        let streams_drained = async {
            if let Some(acceptor) = &streams {
                acceptor.drained().await;
            }
        };
        tracing::info!("shutting down: no new connections, finishing requests in flight");
        // The broker stops steering clients here while the requests in flight finish.
        let _ = stop_offers.send(true);
        tokio::select! {
            ((), ()) = async { tokio::join!(graceful.shutdown(), streams_drained) } => tracing::info!("all connections closed"),
            () = tokio::time::sleep(self.grace) => tracing::warn!("grace period over; closing remaining connections"),
        }
        // Asynchronous requests not yet answered or delivered wait in their store for the
        // next start.
        let _ = stop_workers.send(true);
        let abort = offers.abort_handle();
        if tokio::time::timeout(crate::offers_task::DEREGISTER_WAIT, offers)
            .await
            .is_err()
        {
            abort.abort();
        }
        Ok(())
    }
}

/// One accepted connection, served in its own task.
struct Connection {
    /// The state the server started with (its connection figures carry over reloads).
    state: Arc<State>,
    /// The state each request is answered with.
    current: Arc<crate::current::CurrentState>,
    peer: SocketAddr,
    activity: Arc<Activity>,
    builder: auto::Builder<TokioExecutor>,
    watcher: hyper_util::server::graceful::Watcher,
    /// The handshake to make first, when the listener speaks TLS.
    tls: Option<tokio_rustls::TlsAcceptor>,
    header_timeout: Duration,
    idle: Duration,
}

impl Connection {
    /// Makes the TLS handshake (if any, within the header timeout), then serves HTTP
    /// until the connection ends, shuts down gracefully or is idle too long.
    async fn run(self, stream: TcpStream) {
        let metrics = self.state.metrics.connections.clone();
        let peer = self.peer;
        let activity = self.activity.clone();
        let idle = self.idle;
        tokio::select! {
            () = self.serve(stream) => {}
            () = activity.idle_for(idle) => {
                metrics.idle_closed();
                tracing::debug!(%peer, "idle connection closed");
            }
        }
    }

    async fn serve(self, stream: TcpStream) {
        let marking = Arc::new(crate::marking::Marking::default());
        // Marked sits on the TCP socket, under TLS, so answers are marked either way.
        let stream = Watched::new(
            crate::marking::Marked::new(stream, marking.clone()),
            self.activity.clone(),
        );
        let metrics = &self.state.metrics.connections;
        let peer = self.peer;
        let (stream, client) = match &self.tls {
            None => (MaybeTls::Plain(stream), None),
            Some(acceptor) => {
                match tokio::time::timeout(self.header_timeout, acceptor.accept(stream)).await {
                    Ok(Ok(tls)) => {
                        let client = crate::tls::peer_name::of_connection(&tls);
                        (MaybeTls::Tls(Box::new(tls)), client)
                    }
                    Ok(Err(e)) => {
                        metrics.tls_failed("error");
                        tracing::debug!(%peer, error = %e, "TLS handshake failed");
                        return;
                    }
                    Err(_) => {
                        metrics.tls_failed("timeout");
                        tracing::debug!(%peer, "TLS handshake not done within header_timeout_ms");
                        return;
                    }
                }
            }
        };
        let current = self.current.clone();
        let activity = self.activity.clone();
        let service = service_fn(move |mut req: hyper::Request<Incoming>| {
            req.extensions_mut().insert(marking.clone());
            answer(current.load(), req, peer, client.clone(), activity.busy())
        });
        let connection = self
            .builder
            .serve_connection(TokioIo::new(stream), service)
            .into_owned();
        if let Err(e) = self.watcher.watch(connection).await {
            tracing::debug!(error = %e, "connection ended with an error");
        }
    }
}

/// Answers one request; a panic anywhere below becomes an `Internal` fault, and the
/// connection and the server live on.
async fn answer(
    state: Arc<State>,
    mut req: hyper::Request<Incoming>,
    peer: SocketAddr,
    client: Option<crate::tls::ClientCertificate>,
    busy: Busy,
) -> Result<hyper::Response<crate::stream_accept::ServerBody>, Infallible> {
    if crate::stream_accept::is_h2_stream(&req) {
        return Ok(crate::stream_accept::h2_stream(
            state, req, peer, client, busy,
        ));
    }
    req.extensions_mut().insert(Peer(peer));
    if let Some(client) = client {
        req.extensions_mut().insert(client);
    }
    let response = dispatch::handle_guarded(state, req).await;
    drop(busy);
    Ok(response.map(http_body_util::Either::Left))
}
