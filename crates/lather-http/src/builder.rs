//! Building a server in code: services by path, limits, handler kinds, the CPU pool — and
//! the TOML configuration path on top of it.

use crate::service::{Admission, Service};
use crate::state::State;
use crate::{ServeError, Server};
use lather_compose::{Composer, ServicePlans};
use lather_config::{Config, MaxInFlight, ServerConfig};
use lather_pipeline::{CpuPool, HandlerKind, Plan, SoapService};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

/// A service to serve at a path, with its handler stages and admission settings.
///
/// ```
/// use lather_http::{Echo, Mount};
/// let mount = Mount::new("/echo", Echo).name("echo").max_in_flight(64);
/// # let _ = mount;
/// ```
pub struct Mount {
    path: String,
    name: Option<String>,
    service: Arc<dyn SoapService>,
    plans: ServicePlans,
    queue_capacity: Option<usize>,
    max_in_flight: Option<MaxInFlight>,
    public_url: Option<String>,
}

impl Mount {
    /// `service` at `path` (which starts with `/`).
    pub fn new(path: impl Into<String>, service: impl SoapService) -> Self {
        Mount::shared(path, Arc::new(service))
    }

    /// A service already shared as a trait object.
    pub fn shared(path: impl Into<String>, service: Arc<dyn SoapService>) -> Self {
        Mount {
            path: path.into(),
            name: None,
            service,
            plans: ServicePlans::default(),
            queue_capacity: None,
            max_in_flight: None,
            public_url: None,
        }
    }

    /// Its name in metrics and logs (default: the path without its leading `/`).
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// The stages run on each request before the service.
    pub fn request(mut self, plan: Plan) -> Self {
        self.plans.request = plan;
        self
    }

    /// The stages run on each SOAP response of the service.
    pub fn response(mut self, plan: Plan) -> Self {
        self.plans.response = plan;
        self
    }

    /// The stages run on each fault on its way back.
    pub fn fault(mut self, plan: Plan) -> Self {
        self.plans.fault = plan;
        self
    }

    /// Its own queue capacity (default: the server's).
    pub fn queue_capacity(mut self, capacity: usize) -> Self {
        self.queue_capacity = Some(capacity);
        self
    }

    /// A fixed in-flight limit (default: the server's, adaptive).
    pub fn max_in_flight(mut self, limit: usize) -> Self {
        self.max_in_flight = Some(MaxInFlight::Fixed(limit.max(1)));
        self
    }

    /// The URL clients reach it at (its WSDL's address).
    pub fn public_url(mut self, url: impl Into<String>) -> Self {
        self.public_url = Some(url.into());
        self
    }

    fn into_service(self, server: &ServerConfig) -> Service {
        let admission = Admission {
            queue_capacity: self.queue_capacity.unwrap_or(server.queue_capacity),
            max_in_flight: self.max_in_flight.unwrap_or(server.max_in_flight),
            min_in_flight: server.min_in_flight,
        };
        let name = self
            .name
            .unwrap_or_else(|| self.path.trim_start_matches('/').to_owned());
        let public_url = self.public_url.or_else(|| {
            server
                .public_url
                .as_ref()
                .map(|base| format!("{}{}", base.trim_end_matches('/'), self.path))
        });
        Service::new(
            name,
            self.path,
            self.service,
            self.plans,
            admission,
            public_url,
        )
    }
}

impl std::fmt::Debug for Mount {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mount")
            .field("path", &self.path)
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// Builds a [`Server`]: see [`Server::builder`].
#[derive(Debug)]
pub struct ServerBuilder {
    server: ServerConfig,
    config: Option<Config>,
    mounts: Vec<Mount>,
    cpu_pool: Option<CpuPool>,
    cpu_gauge: Option<Arc<lather_qos::CpuGauge>>,
    composer: Composer,
}

impl Default for ServerBuilder {
    fn default() -> Self {
        ServerBuilder {
            server: ServerConfig::default(),
            config: None,
            mounts: Vec::new(),
            cpu_pool: None,
            cpu_gauge: None,
            composer: Composer::builtin(),
        }
    }
}

impl ServerBuilder {
    /// The address to listen on (default `127.0.0.1:8080`; port 0 picks a free port).
    pub fn listen(mut self, address: SocketAddr) -> Self {
        self.server.listen = address;
        self
    }

    /// All `[server]` settings at once (limits, timeouts, connection caps, admission).
    pub fn settings(mut self, settings: ServerConfig) -> Self {
        self.server = settings;
        self
    }

    /// The largest request accepted, in bytes (default 4 MiB).
    pub fn max_message_bytes(mut self, bytes: usize) -> Self {
        self.server.max_message_bytes = bytes;
        self
    }

    /// A fixed in-flight limit for every service (default adaptive).
    pub fn max_in_flight(mut self, limit: usize) -> Self {
        self.server.max_in_flight = MaxInFlight::Fixed(limit.max(1));
        self
    }

    /// How many requests each service queues beyond its in-flight limit (default 1024).
    pub fn queue_capacity(mut self, capacity: usize) -> Self {
        self.server.queue_capacity = capacity;
        self
    }

    /// How long a graceful shutdown waits for requests in flight (default 30 s).
    pub fn shutdown_grace(mut self, grace: Duration) -> Self {
        self.server.shutdown_grace_ms = u64::try_from(grace.as_millis()).unwrap_or(u64::MAX);
        self
    }

    /// Serves `service` at `path` (named after the path).
    pub fn service(self, path: impl Into<String>, service: impl SoapService) -> Self {
        self.mount(Mount::new(path, service))
    }

    /// Serves a [`Mount`]: a service with its name, handler stages and admission settings.
    pub fn mount(mut self, mount: Mount) -> Self {
        self.mounts.push(mount);
        self
    }

    /// The services, handlers and `[server]` settings of a configuration; services added in
    /// code are served beside the configuration's.
    pub fn config(mut self, config: &Config) -> Self {
        self.server = config.server.clone();
        self.config = Some(config.clone());
        self
    }

    /// Adds a handler kind the configuration's `[handlers.NAME]` tables may use
    /// (`kind = "<its name>"`), beside the built-in kinds (replacing one of the same name).
    pub fn kind<K: HandlerKind>(mut self, kind: K) -> Self {
        self.composer.kinds_mut().register(kind);
        self
    }

    /// The pool CPU-bound handlers run on (default: one of `[server] cpu_threads` threads,
    /// made at bind).
    pub fn cpu_pool(mut self, pool: CpuPool) -> Self {
        self.cpu_pool = Some(pool);
        self
    }

    /// The CPU reading load-adaptive compression follows (default: a gauge sampling this
    /// process's CPU time, started at bind). [`lather_qos::CpuGauge::manual`] gives one the
    /// application sets itself.
    pub fn cpu_gauge(mut self, gauge: Arc<lather_qos::CpuGauge>) -> Self {
        self.cpu_gauge = Some(gauge);
        self
    }

    /// Binds the listen address and prepares every service and its handler stages. A
    /// handler or flow that is not valid is a [`ServeError::Config`] naming its line; an
    /// unreachable NATS server (remote handlers, shared subscriptions) is
    /// [`ServeError::NatsUnreachable`] naming the URL. A listener TLS file that cannot be
    /// used is a [`ServeError::Config`] naming the key's line (or [`ServeError::Tls`] for
    /// settings given in code).
    pub async fn bind(self) -> Result<Server, ServeError> {
        // On the heap: the preparation holds much across its awaits, and callers' futures
        // stay small.
        Box::pin(self.prepare()).await
    }

    async fn prepare(self) -> Result<Server, ServeError> {
        let server = self.server;
        // Before binding: a certificate that cannot be used leaves the port free. (Boxed:
        // it is held across every await below.)
        let tls = match &server.tls {
            Some(settings) => Some(Box::new(
                crate::tls::listener::ListenerTls::load(settings)
                    .map_err(|e| tls_error(self.config.as_ref(), settings, e))?,
            )),
            None => None,
        };
        let listener = tokio::net::TcpListener::bind(server.listen)
            .await
            .map_err(|source| ServeError::Listen {
                address: server.listen,
                source,
            })?;
        let local = listener.local_addr()?;
        let cpu_pool = match self.cpu_pool {
            Some(pool) => pool,
            None => CpuPool::new(server.cpu_threads)
                .map_err(ServeError::CpuPool)?
                .inline_below(Duration::from_micros(server.cpu_inline_micros)),
        };
        let (mut services, link) = match &self.config {
            Some(config) => crate::configured::configured(&self.composer, config, local, &[])?,
            None => (Vec::new(), None),
        };
        let mounted: Vec<Arc<Service>> = self
            .mounts
            .into_iter()
            .map(|m| Arc::new(m.into_service(&server)))
            .collect();
        services.extend(mounted.iter().cloned());
        let gauge = self.cpu_gauge.unwrap_or_else(lather_qos::CpuGauge::start);
        let qos = self.config.as_ref().and_then(|c| c.qos.as_ref());
        let policy = lather_qos::QosPolicy::new(qos, gauge);
        let mut state = State::assemble(&server, services, local, link, cpu_pool, policy, None)?;
        let streams = match self.config.as_ref().and_then(|c| c.stream.as_ref()) {
            Some(config) => {
                let stream_tls = tls
                    .as_ref()
                    .filter(|_| config.uses_tls(true))
                    .map(|tls| tls.config());
                let (listener, acceptor) = crate::stream_acceptor::StreamAcceptor::bind(
                    config,
                    server.max_message_bytes,
                    stream_tls,
                )
                .await?;
                tracing::info!(port = acceptor.port(), "accepting message streams");
                let acceptor = Arc::new(acceptor);
                state.streams = Some(acceptor.clone());
                Some((listener, acceptor))
            }
            None => None,
        };
        crate::configured::register_collectors(&mut state);
        if let Some(q) = qos
            && let Some(url) = &q.broker
            && url.get_ref() != "nats"
        {
            let outbound = match &self.config {
                Some(config) => crate::outbound_tls::load(config)?,
                None => lather_client::OutboundTls::system(),
            };
            state.offer_broker = crate::offer_broker::OfferSender::http(url.get_ref(), &outbound)
                .map(|sender| crate::offer_broker::OfferBroker {
                    sender,
                    refresh: crate::qos_nats::refresh(q),
                });
        }
        if let Some(config) = &self.config {
            check_nats_files(config)?;
        }
        if let Some(link) = state.link.clone() {
            link.connect()
                .await
                .map_err(|e| ServeError::NatsUnreachable(e.to_string()))?;
            state.readiness.watch_nats(link);
        }
        if let Some(config) = &self.config {
            if let Some(nats) = &config.nats {
                // One connection for every shared store.
                let mut shared = crate::shared_nats::SharedNats::new(&state, nats);
                crate::eventing_nats::share(config, &state, nats, &mut shared).await?;
                crate::context_nats::share(config, &state, nats, &mut shared).await?;
                crate::async_nats_share::share(config, &state, nats, &mut shared).await?;
                let by_nats = crate::qos_nats::share(config, &state, nats, &mut shared).await?;
                if let Some(link) = shared.into_link() {
                    state.readiness.watch_nats(link);
                }
                if by_nats.is_some() {
                    state.offer_broker = by_nats;
                }
            }
            crate::exposure::warn(config);
        }
        let server = Server::new(listener, state, &server)
            .with_streams(streams)
            .with_tls(tls);
        Ok(match self.config {
            Some(config) => server.with_reload(crate::reload::ReloadParts {
                composer: self.composer,
                mounted,
                config,
                listen: local,
            }),
            None => server,
        })
    }
}

/// The `[nats]` TLS and authentication files, read as a connection would: one that
/// cannot be used is a [`ServeError::Config`] naming the key's line and the file.
fn check_nats_files(config: &Config) -> Result<(), ServeError> {
    if let Some(nats) = &config.nats {
        lather_remote::connect_options(nats)
            .map_err(|e| ServeError::Config(config.error_at(e.span(), e.to_string())))?;
    }
    Ok(())
}

/// A listener TLS file that cannot be used: a configuration error at the key's line when
/// the settings came from a configuration file, else [`ServeError::Tls`].
fn tls_error(
    config: Option<&Config>,
    settings: &lather_config::TlsConfig,
    error: crate::TlsError,
) -> ServeError {
    let Some(config) = config else {
        return ServeError::Tls(error);
    };
    let span = match error.key() {
        "server.tls.key_file" => settings.key_file.span(),
        "server.tls.client_ca_file" => settings
            .client_ca_file
            .as_ref()
            .map_or_else(|| settings.cert_file.span(), |f| f.span()),
        _ => settings.cert_file.span(),
    };
    ServeError::Config(config.error_at(span, error.to_string()))
}

impl Server {
    /// A builder: listen address, limits, services by path, the CPU pool.
    pub fn builder() -> ServerBuilder {
        ServerBuilder::default()
    }

    /// Binds `config.server.listen` and prepares the configuration's services and their
    /// handler stages (the builder with [`ServerBuilder::config`]). A handler or flow that
    /// is not valid is a [`ServeError::Config`] naming its line; when a handler is placed
    /// remotely, or an event source shares its subscriptions over NATS, an unreachable
    /// NATS server is [`ServeError::NatsUnreachable`] naming the URL.
    pub async fn from_config(config: &Config) -> Result<Server, ServeError> {
        Server::builder().config(config).bind().await
    }

    /// Reads every TLS file `config` names — the listener's certificate, key and client
    /// CAs, `outbound_ca_file`, each gateway's upstream CAs and client certificate, and
    /// `[nats]`'s TLS and authentication files — as a start would,
    /// without binding anything: a file that cannot be used is a [`ServeError::Config`]
    /// naming the key's line and the file.
    pub fn check_tls_files(config: &Config) -> Result<(), ServeError> {
        crate::outbound_tls::load(config)?;
        if let Some(settings) = &config.server.tls {
            crate::tls::listener::ListenerTls::load(settings)
                .map_err(|e| tls_error(Some(config), settings, e))?;
        }
        for svc in &config.services {
            if matches!(
                svc.kind(),
                lather_config::ServiceKind::Gateway(_)
                    | lather_config::ServiceKind::RegistryGateway(_)
            ) {
                crate::gateway::UpstreamTls::of(svc).map_err(|(span, e)| {
                    ServeError::Config(config.error_at(span, e.to_string()))
                })?;
            }
        }
        check_nats_files(config)
    }

    /// The same as [`Server::from_config`].
    pub async fn bind(config: &Config) -> Result<Server, ServeError> {
        Server::from_config(config).await
    }
}
