//! One accept loop: takes connections off a listener and serves each in a task of the
//! runtime the loop runs on — HTTP/1.1 (keep-alive) and h2c, or after a TLS handshake
//! (within `header_timeout_ms`) HTTPS. Connections are capped in all and per client
//! address, and closed when idle. With several I/O threads
//! ([`Server::io_threads`](crate::Server::io_threads)), each with a runtime of its own, the
//! accepting thread hands each connection to the thread [`Placement`] picks: a request
//! never leaves the thread that serves its connection. With the threads pinned one per
//! CPU, a plain HTTP/1.1 connection may move to another thread between two requests
//! ([`crate::roam`]).

use crate::accept::AcceptErrors;
use crate::arriving::Arriving;
use crate::conn_cap::ConnectionCaps;
use crate::dispatch;
use crate::drain::{Drain, DrainWatch};
use crate::homed::{Homed, SeenCpu};
use crate::idle::{Activity, Busy};
use crate::lanes::{Handed, Held, LaneCount, Lanes};
use crate::peer::Peer;
use crate::placement::Placement;
use crate::roam::{LaneMap, Roam, Roaming, Watch};
use crate::state::State;
use crate::tls::listener::SharedServerConfig;
use crate::tls::stream::MaybeTls;
use crate::watched::Watched;
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

/// What every accept loop of a server shares.
#[derive(Debug)]
pub(crate) struct Accepting {
    /// The state the server started with (its connection figures carry over reloads).
    pub(crate) state: Arc<State>,
    /// The state each request is answered with.
    pub(crate) current: Arc<crate::current::CurrentState>,
    pub(crate) caps: Arc<ConnectionCaps>,
    /// TLS on the listener, when configured.
    pub(crate) tls: Option<SharedServerConfig>,
    pub(crate) header_timeout: Duration,
    pub(crate) idle: Duration,
}

impl Accepting {
    /// Accepts on `listener` until `stop` completes. Each connection goes to the thread
    /// `placement` picks — this runtime or one of `lanes` — and is served in a task there.
    /// Returns what tracks the connections this runtime still serves, to drain them.
    pub(crate) async fn accept_until(
        &self,
        listener: &TcpListener,
        lanes: &Lanes,
        placement: &Placement,
        stop: impl Future<Output = ()>,
    ) -> Drain {
        let drain = Drain::new();
        let builder = self.http();
        let own = Arc::new(AtomicUsize::new(0));
        let mut accept_errors = AcceptErrors::new();
        let metrics = &self.state.metrics.connections;
        let mut stop = std::pin::pin!(stop);
        loop {
            let accepted = tokio::select! {
                accepted = listener.accept() => accepted,
                () = &mut stop => break,
            };
            let (stream, peer) = match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    accept_errors.failed(&e, listener, metrics).await;
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
            let picked = placement
                .pick(&stream, &lanes.open(), own.load(Ordering::Relaxed))
                .and_then(|lane| lanes.get(lane));
            if let Some(lane) = picked {
                let std_stream = match stream.into_std() {
                    Ok(std_stream) => std_stream,
                    Err(e) => {
                        tracing::debug!(%peer, error = %e, "an accepted connection cannot be handed over");
                        continue;
                    }
                };
                let held = Held {
                    _slot: slot,
                    _open: metrics.opened(),
                    lane: lane.count(),
                };
                let handed = Handed::Accepted {
                    stream: std_stream,
                    peer,
                    held,
                };
                if let Err(Handed::Accepted { stream, held, .. }) = lane.hand(handed) {
                    // That thread has stopped: served, and counted, here instead.
                    let held = Held {
                        lane: LaneCount::new(&own),
                        ..held
                    };
                    match TcpStream::from_std(stream) {
                        Ok(stream) => self.spawn(stream, peer, held, &builder, &drain, None),
                        Err(e) => {
                            tracing::debug!(%peer, error = %e, "an accepted connection cannot be served");
                        }
                    }
                }
                continue;
            }
            let held = Held {
                _slot: slot,
                _open: metrics.opened(),
                lane: LaneCount::new(&own),
            };
            self.spawn(stream, peer, held, &builder, &drain, None);
        }
        drain
    }

    /// Serves the connections handed over on `handed` until `stop` completes (and those
    /// handed over before it), each in a task of this runtime; then returns what tracks
    /// them, to drain them. With `roaming`, plain HTTP/1.1 connections may move between
    /// its lanes ([`crate::roam`]).
    pub(crate) async fn serve_handed(
        &self,
        mut handed: mpsc::UnboundedReceiver<Handed>,
        roaming: Option<LaneMap>,
        stop: impl Future<Output = ()>,
    ) -> Drain {
        let drain = Drain::new();
        let builder = self.http();
        let mut stop = std::pin::pin!(stop);
        loop {
            let next = tokio::select! {
                next = handed.recv() => next,
                () = &mut stop => break,
            };
            let Some(next) = next else { break };
            self.take(next, &builder, &drain, roaming.as_ref());
        }
        // Accepted before the stop: served (and drained) like the others.
        handed.close();
        while let Ok(next) = handed.try_recv() {
            self.take(next, &builder, &drain, roaming.as_ref());
        }
        drain
    }

    /// Serves a handed-over connection on this runtime.
    fn take(
        &self,
        handed: Handed,
        builder: &auto::Builder<TokioExecutor>,
        drain: &Drain,
        roaming: Option<&LaneMap>,
    ) {
        match handed {
            Handed::Accepted { stream, peer, held } => match TcpStream::from_std(stream) {
                Ok(stream) => self.spawn(stream, peer, held, builder, drain, roaming),
                Err(e) => {
                    tracing::debug!(%peer, error = %e, "a handed-over connection cannot be served")
                }
            },
            // Its drain is still the one of the thread that accepted it.
            Handed::Moved(task) => drop(tokio::spawn(task)),
        }
    }

    /// The HTTP/1.1 and HTTP/2 settings of every connection.
    fn http(&self) -> auto::Builder<TokioExecutor> {
        let mut builder = auto::Builder::new(TokioExecutor::new());
        builder.http1().keep_alive(true);
        if self.tls.is_some() {
            // Over TLS hyper times request heads (the connection's watch sees TLS
            // records); on plain connections the watch does, without a timer per request.
            builder
                .http1()
                .timer(TokioTimer::new())
                .header_read_timeout(self.header_timeout);
        }
        builder.http2().timer(TokioTimer::new());
        builder
    }

    /// Serves `stream` from `peer` in a task of this runtime, holding `held` until it ends;
    /// with `roaming`, a task free to move between those lanes.
    fn spawn(
        &self,
        stream: TcpStream,
        peer: SocketAddr,
        held: Held,
        builder: &auto::Builder<TokioExecutor>,
        drain: &Drain,
        roaming: Option<&LaneMap>,
    ) {
        // Plain connections only: a TLS one's hyper times its heads on this thread.
        let roam = roaming.filter(|_| self.tls.is_none()).map(|map| Roam {
            map: map.clone(),
            seen: Arc::new(SeenCpu::new()),
        });
        let activity = Activity::new(self.tls.is_none());
        let watch = Watch {
            activity: activity.clone(),
            idle: self.idle,
            head: self.header_timeout,
            peer,
            metrics: self.state.metrics.connections.clone(),
        };
        let connection = Connection {
            state: self.state.clone(),
            current: self.current.clone(),
            peer,
            activity,
            builder: builder.clone(),
            drain: drain.watch(),
            tls: self.tls.as_ref().map(SharedServerConfig::acceptor),
            header_timeout: self.header_timeout,
        };
        let seen = roam.as_ref().map(|roam| roam.seen.clone());
        let serve = Box::pin(connection.serve(Homed::new(stream, seen)));
        tokio::spawn(Roaming::new(serve, watch, held, roam));
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
    drain: DrainWatch,
    /// The handshake to make first, when the listener speaks TLS.
    tls: Option<tokio_rustls::TlsAcceptor>,
    header_timeout: Duration,
}

impl Connection {
    /// Makes the TLS handshake (if any, within the header timeout), then serves HTTP
    /// until the connection ends or shuts down gracefully.
    async fn serve(self, stream: Homed) {
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
                let within = self.header_timeout;
                let bound = "header_timeout_ms";
                let accepted = crate::tls::handshake::accept_within(
                    acceptor, stream, within, bound, metrics, peer,
                );
                let Some((tls, client)) = accepted.await else {
                    return;
                };
                (MaybeTls::Tls(Box::new(tls)), client)
            }
        };
        let current = self.current.clone();
        let activity = self.activity.clone();
        let service = service_fn(move |request: hyper::Request<Incoming>| {
            let peer = Peer {
                addr: peer,
                marking: Some(marking.clone()),
            };
            answer(
                current.load(),
                Box::new(Arriving { request, peer }),
                client.clone(),
                activity.busy(),
            )
        });
        let connection = self
            .builder
            .serve_connection(TokioIo::new(stream), service)
            .into_owned();
        if let Err(e) = self.drain.serve(connection).await {
            tracing::debug!(error = %e, "connection ended with an error");
        }
    }
}

/// Answers one request; a panic anywhere below becomes an `Internal` fault, and the
/// connection and the server live on. The request comes boxed with its peer and stays
/// boxed down to where it is taken apart: each async level keeps its arguments twice,
/// and a request held by value would make each level's future, moved whole at every
/// level above it, half a kilobyte larger.
async fn answer(
    state: Arc<State>,
    mut req: Box<Arriving<Incoming>>,
    client: Option<crate::tls::ClientCertificate>,
    busy: Busy,
) -> Result<hyper::Response<crate::stream_accept::ServerBody>, Infallible> {
    if crate::stream_accept::is_h2_stream(&req.request) {
        let Arriving { request, peer } = *req;
        return Ok(crate::stream_accept::h2_stream(
            state, request, peer.addr, client, busy,
        ));
    }
    if let Some(client) = client {
        req.request.extensions_mut().insert(client);
    }
    let response = dispatch::handle_guarded(state, req).await;
    drop(busy);
    Ok(response.map(http_body_util::Either::Left))
}
