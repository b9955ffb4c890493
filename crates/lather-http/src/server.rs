//! The server: its listener, the tasks it starts (message streams, asynchronous replies,
//! QoS offers, certificate reloads) and its graceful shutdown. Connections are accepted and
//! served by [`crate::listening`], on one runtime or one per I/O thread.

use crate::ServeError;
use crate::conn_cap::ConnectionCaps;
use crate::state::State;
use lather_config::ServerConfig;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;

/// The phases of the other I/O threads: serving, draining their connections, ending their
/// runtimes.
const RUNNING: u8 = 0;
const DRAINING: u8 = 1;
const EXITING: u8 = 2;

/// The other I/O threads: the lanes connections are handed to, and a receiver each that
/// completes once the thread has stopped.
type IoThreads = (
    Arc<crate::lanes::Lanes>,
    Vec<tokio::sync::oneshot::Receiver<()>>,
);

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
    /// Threads accepting and serving connections ([`Server::io_threads`]).
    io_threads: usize,
    /// Whether a thread per CPU is pinned to it ([`Server::pin_io_threads`]).
    pin_io_threads: bool,
    /// Whether plain connections move between pinned I/O threads
    /// (`[server] roam_connections`).
    roam_connections: bool,
    /// The idle shares roaming connections move by.
    roam_thresholds: crate::placement::Thresholds,
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
            io_threads: 1,
            pin_io_threads: server.pin_io_threads,
            roam_connections: server.roam_connections,
            roam_thresholds: crate::placement::Thresholds::from_percent(
                server.roam_spare_idle_percent,
                server.roam_saturated_idle_percent,
            ),
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

    /// Serves connections on `threads` threads (at least 1): the runtime [`serve`] runs on,
    /// which accepts, and `threads - 1` more, each with a current-thread runtime of its own.
    /// Each connection is handed to the thread serving the fewest and stays there with its
    /// requests, so threads do not wake each other for its I/O. Run `serve` on a
    /// current-thread runtime to have one runtime per thread; the default, 1, serves every
    /// connection on the calling runtime. The other threads' runtimes live until `serve`
    /// returns: tasks started there (shared by every thread) serve to the end.
    ///
    /// [`serve`]: Server::serve
    pub fn io_threads(mut self, threads: usize) -> Server {
        self.io_threads = threads.max(1);
        self
    }

    /// Whether, when there is one I/O thread per CPU the process may use, each runs on its
    /// CPU only and serves the connections whose packets that CPU receives (`[server]
    /// pin_io_threads`, default true). The accepting thread then serves none itself; the
    /// threads those threads start (tokio's blocking pool, the CPU pool) run on every CPU.
    /// With any other number of threads, or false, connections go to the thread serving
    /// the fewest and no thread is pinned.
    pub fn pin_io_threads(mut self, pin: bool) -> Server {
        self.pin_io_threads = pin;
        self
    }

    /// With pinned I/O threads ([`Server::pin_io_threads`]): whether a plain HTTP/1.1
    /// connection moves, between two requests, to the thread of the CPU its packets arrive
    /// on and off a saturated CPU (`[server] roam_connections`, default true). False: each
    /// connection is served by the thread it was placed on at accept. TLS and HTTP/2
    /// connections never move.
    pub fn roam_connections(mut self, roam: bool) -> Server {
        self.roam_connections = roam;
        self
    }

    /// How connections are spread over the I/O threads.
    fn placement(&self) -> crate::placement::Placement {
        let cpus = lather_pipeline::affinity::process_cpus();
        if self.pin_io_threads && self.io_threads > 1 && cpus.len() == self.io_threads {
            crate::placement::Placement::ByCpu {
                cpus: cpus.to_vec(),
            }
        } else {
            crate::placement::Placement::Fewest
        }
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
        if let Some(tls) = &mut self.tls {
            tls.start_reloading();
        }
        let accepting = Arc::new(crate::listening::Accepting {
            state: self.state.clone(),
            current: self.current.clone(),
            caps: self.caps.clone(),
            tls: self.tls.as_ref().map(|tls| tls.config()),
            header_timeout: self.header_timeout,
            idle: self.idle,
        });
        let (phase, threads_phase) = tokio::sync::watch::channel(RUNNING);
        let placement = self.placement();
        let (lanes, others) = self.start_io_threads(&accepting, &threads_phase, &placement)?;
        let drain = accepting
            .accept_until(&self.listener, &lanes, &placement, shutdown)
            .await;
        let _ = phase.send(DRAINING);
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
        // The other threads drain their connections within the same grace period.
        let others_drained = async {
            for done in others {
                let _ = done.await;
            }
        };
        tracing::info!("shutting down: no new connections, finishing requests in flight");
        // The broker stops steering clients here while the requests in flight finish.
        let _ = stop_offers.send(true);
        tokio::select! {
            ((), (), ()) = async { tokio::join!(drain.shutdown(), streams_drained, others_drained) } => tracing::info!("all connections closed"),
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
        // Only now: tasks the other threads' runtimes hold may have served until here.
        let _ = phase.send(EXITING);
        Ok(())
    }

    /// Starts the I/O threads `placement` has besides the accepting one, each with a
    /// runtime of its own serving the connections handed to its lane (pinned to the lane's
    /// CPU where `placement` names one). When `phase` turns
    /// [`DRAINING`] a thread drains its connections (up to the grace period) and completes
    /// its receiver; its runtime, and the tasks started on it, live on until `phase` turns
    /// [`EXITING`] (or its sender is dropped).
    fn start_io_threads(
        &self,
        accepting: &Arc<crate::listening::Accepting>,
        phase: &tokio::sync::watch::Receiver<u8>,
        placement: &crate::placement::Placement,
    ) -> Result<IoThreads, ServeError> {
        let count = placement.lanes(self.io_threads);
        let (lanes, receivers): (Vec<_>, Vec<_>) =
            (0..count).map(|_| crate::lanes::Lane::new()).unzip();
        let lanes = Arc::new(crate::lanes::Lanes::new(lanes));
        // Pinned threads, one per CPU: plain connections follow their clients' CPUs.
        let roaming = match placement {
            crate::placement::Placement::ByCpu { cpus } if self.roam_connections => {
                Some(crate::roam::LaneMap {
                    lanes: lanes.clone(),
                    cpus: cpus.clone().into(),
                    thresholds: self.roam_thresholds,
                })
            }
            crate::placement::Placement::ByCpu { .. } | crate::placement::Placement::Fewest => None,
        };
        let mut others = Vec::new();
        for (lane, handed) in receivers.into_iter().enumerate() {
            let index = lane + 1;
            let accepting = accepting.clone();
            let mut phase = phase.clone();
            let grace = self.grace;
            let (done, finished) = tokio::sync::oneshot::channel();
            let cpu = placement.cpu(lane);
            let roaming = roaming.clone();
            std::thread::Builder::new()
                .name(format!("lather-io-{index}"))
                .spawn(move || {
                    crate::io_thread::set(index);
                    if let Some(cpu) = cpu
                        && let Err(e) = lather_pipeline::affinity::pin_current_thread(cpu)
                    {
                        tracing::warn!(cpu, error = %e, "an I/O thread cannot be pinned to its CPU");
                    }
                    let runtime = match tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        // Its blocking pool's threads run on every CPU, not this one's.
                        .on_thread_start(lather_pipeline::affinity::release_current_thread)
                        .build()
                    {
                        Ok(runtime) => runtime,
                        Err(e) => {
                            tracing::error!(error = %e, "an I/O thread's runtime cannot start");
                            return;
                        }
                    };
                    runtime.block_on(async move {
                        let mut draining = phase.clone();
                        let stop = async move {
                            let _ = draining.wait_for(|p| *p >= DRAINING).await;
                        };
                        let drain = accepting.serve_handed(handed, roaming, stop).await;
                        let _ = tokio::time::timeout(grace, drain.shutdown()).await;
                        let _ = done.send(());
                        let _ = phase.wait_for(|p| *p >= EXITING).await;
                    });
                })?;
            others.push(finished);
        }
        Ok((lanes, others))
    }
}
