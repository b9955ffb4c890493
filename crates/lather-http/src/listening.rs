//! One accept loop: takes connections off a listener and serves each in a task of the
//! runtime the loop runs on — HTTP/1.1 (keep-alive) and h2c, or after a TLS handshake
//! (within `header_timeout_ms`) HTTPS. Connections are capped in all and per client
//! address, and closed when idle. With several I/O threads
//! ([`Server::io_threads`](crate::Server::io_threads)), each with a runtime of its own, the
//! accepting thread hands each connection to the thread serving the fewest: a connection's
//! requests then never leave the thread that serves it.

use crate::accept::AcceptErrors;
use crate::arriving::Arriving;
use crate::conn_cap::ConnectionCaps;
use crate::dispatch;
use crate::drain::{Drain, DrainWatch};
use crate::idle::{Activity, Busy, Stall};
use crate::peer::Peer;
use crate::placement::Placement;
use crate::state::State;
use crate::tls::listener::SharedServerConfig;
use crate::tls::stream::MaybeTls;
use crate::watched::Watched;
use crate::when_woken::WhenWoken;
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

/// What a connection holds while it is open: its place under the connection caps, the
/// open-connections gauge, and its place in its thread's count.
struct Held {
    _slot: crate::conn_cap::Slot,
    _open: crate::metrics::InFlight,
    _lane: LaneCount,
}

/// One open connection counted on its thread until dropped.
struct LaneCount(Arc<AtomicUsize>);

impl Drop for LaneCount {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A connection accepted on the accepting thread, handed to another I/O thread.
pub(crate) struct Handed {
    stream: std::net::TcpStream,
    peer: SocketAddr,
    held: Held,
}

/// An I/O thread connections can be handed to: its queue and how many it serves.
#[derive(Debug)]
pub(crate) struct Lane {
    queue: mpsc::UnboundedSender<Handed>,
    open: Arc<AtomicUsize>,
}

impl Lane {
    /// A lane and the receiving end its thread serves.
    pub(crate) fn new() -> (Lane, mpsc::UnboundedReceiver<Handed>) {
        let (queue, handed) = mpsc::unbounded_channel();
        let lane = Lane {
            queue,
            open: Arc::default(),
        };
        (lane, handed)
    }
}

impl Accepting {
    /// Accepts on `listener` until `stop` completes. Each connection goes to the thread
    /// `placement` picks — this runtime or one of `lanes` — and is served in a task there.
    /// Returns what tracks the connections this runtime still serves, to drain them.
    pub(crate) async fn accept_until(
        &self,
        listener: &TcpListener,
        lanes: &[Lane],
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
            let open: Vec<usize> = lanes
                .iter()
                .map(|lane| lane.open.load(Ordering::Relaxed))
                .collect();
            let least = placement
                .pick(&stream, &open, own.load(Ordering::Relaxed))
                .and_then(|lane| lanes.get(lane));
            let counted = |open: &Arc<AtomicUsize>| {
                open.fetch_add(1, Ordering::Relaxed);
                LaneCount(open.clone())
            };
            if let Some(lane) = least {
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
                    _lane: counted(&lane.open),
                };
                let handed = Handed {
                    stream: std_stream,
                    peer,
                    held,
                };
                if let Err(mpsc::error::SendError(back)) = lane.queue.send(handed) {
                    // That thread has stopped: served, and counted, here instead.
                    let Held { _slot, _open, .. } = back.held;
                    let held = Held {
                        _slot,
                        _open,
                        _lane: counted(&own),
                    };
                    match TcpStream::from_std(back.stream) {
                        Ok(stream) => self.spawn(stream, peer, held, &builder, &drain),
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
                _lane: counted(&own),
            };
            self.spawn(stream, peer, held, &builder, &drain);
        }
        drain
    }

    /// Serves the connections handed over on `handed` until `stop` completes (and those
    /// handed over before it), each in a task of this runtime; then returns what tracks
    /// them, to drain them.
    pub(crate) async fn serve_handed(
        &self,
        mut handed: mpsc::UnboundedReceiver<Handed>,
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
            self.take(next, &builder, &drain);
        }
        // Accepted before the stop: served (and drained) like the others.
        handed.close();
        while let Ok(next) = handed.try_recv() {
            self.take(next, &builder, &drain);
        }
        drain
    }

    /// Serves a handed-over connection on this runtime.
    fn take(&self, handed: Handed, builder: &auto::Builder<TokioExecutor>, drain: &Drain) {
        match TcpStream::from_std(handed.stream) {
            Ok(stream) => self.spawn(stream, handed.peer, handed.held, builder, drain),
            Err(e) => {
                tracing::debug!(peer = %handed.peer, error = %e, "a handed-over connection cannot be served")
            }
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

    /// Serves `stream` from `peer` in a task of this runtime, holding `held` until it ends.
    fn spawn(
        &self,
        stream: TcpStream,
        peer: SocketAddr,
        held: Held,
        builder: &auto::Builder<TokioExecutor>,
        drain: &Drain,
    ) {
        let connection = Connection {
            state: self.state.clone(),
            current: self.current.clone(),
            peer,
            activity: Activity::new(self.tls.is_none()),
            builder: builder.clone(),
            drain: drain.watch(),
            tls: self.tls.as_ref().map(SharedServerConfig::acceptor),
            header_timeout: self.header_timeout,
            idle: self.idle,
        };
        tokio::spawn(async move {
            let _held = held;
            connection.run(stream).await;
        });
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
        let head = self.header_timeout;
        tokio::select! {
            biased;
            () = self.serve(stream) => {}
            stall = WhenWoken::new(activity.stalled(idle, head)) => match stall {
                Stall::Idle => {
                    metrics.idle_closed();
                    tracing::debug!(%peer, "idle connection closed");
                }
                Stall::SlowHead => {
                    tracing::debug!(%peer, "request head not complete within header_timeout_ms: connection closed");
                }
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
