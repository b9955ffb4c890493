//! A served service: its name, path, SOAP service, handler plans and admission gate.

use crate::eventing::EventSourceService;
use crate::gateway::{Backends, Gateway, RequestRules, ResponsePolicy};
use lather_compose::ServicePlans;
use lather_config::{Builtin, MaxInFlight, ServerConfig, ServiceConfig, ServiceKind};
use lather_envelope::QName;
use lather_pipeline::{Gate, LimitPolicy, SoapService};
use std::sync::Arc;

/// One service at one path.
pub(crate) struct Service {
    pub(crate) name: String,
    /// Its path (for a prefix service, `path = "/api/*"`, the prefix: `/api`).
    pub(crate) path: String,
    /// Whether it answers every path below `path` too (`path = "/api/*"`).
    pub(crate) prefix: bool,
    /// The gateway, when the service is one (its WSDL documents are served through it).
    pub(crate) gateway: Option<Arc<Gateway>>,
    /// What answers the requests.
    pub(crate) soap: Arc<dyn SoapService>,
    /// The request and response handler stages.
    pub(crate) plans: ServicePlans,
    /// Admission: the bounded queue and the in-flight window.
    pub(crate) gate: Arc<Gate>,
    /// The most requests the gate queues.
    pub(crate) queue_capacity: usize,
    /// Header blocks the service itself understands (its handlers' are added per message,
    /// from the plan the message takes).
    pub(crate) understood: Vec<QName>,
    /// The operations it serves (empty: any).
    pub(crate) operations: Vec<QName>,
    /// Whether it is the ultimate SOAP receiver (not a gateway).
    pub(crate) ultimate: bool,
    /// The configured URL clients reach the service at, if any (`public_url`).
    pub(crate) public_url: Option<String>,
    /// The event source, when the service is the `event-source` builtin (its metrics, its
    /// NATS sharing and the `publish` handlers reach it here).
    pub(crate) event_source: Option<lather_eventing::EventSource>,
    /// A context store's shared home, set once NATS is connected (`[nats]`, and
    /// `contexts` not `"local"`).
    pub(crate) shared_contexts: Option<Arc<lather_context::DeferredStore>>,
    /// Whether senders may open message streams to it (`accept_streams`).
    pub(crate) accept_streams: bool,
    /// A gateway's streams to its upstreams (`stream = "tcp"`), for metrics.
    pub(crate) stream_sender: Option<lather_context::stream::StreamSender>,
    /// The addresses its WSDL names in turn (`wsdl_addresses`), if set.
    pub(crate) wsdl_rotation: Option<crate::wsdl_rotation::WsdlRotation>,
    /// Its asynchronous replies (`async_replies`), if on.
    pub(crate) async_replies: Option<Arc<crate::async_reply::AsyncReplies>>,
    /// The queue of accepted asynchronous requests, until the server's worker takes it.
    pub(crate) async_jobs: std::sync::Mutex<Option<tokio::sync::mpsc::UnboundedReceiver<String>>>,
    /// Its QoS offers (`[[service.offer]]`), if it makes any.
    pub(crate) offers: Option<Arc<lather_qos::ServiceOffers>>,
    /// The offer book, when the service is the `qos-broker` builtin (NATS registrations
    /// reach it here).
    pub(crate) qos_book: Option<Arc<lather_qos::broker::OfferBook>>,
    /// A gateway's backends and their records (for `/metrics` and readiness).
    pub(crate) upstreams: Option<Arc<crate::gateway::Backends>>,
}

impl std::fmt::Debug for Service {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Service")
            .field("name", &self.name)
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

/// The lowest floor of a gateway's adaptive in-flight limit. A forwarded request holds no
/// CPU while its backend works, and the backend has an admission gate of its own; the
/// latency the gateway's limit learns from is mostly the backend's, so under load the pair
/// kept up with it fell to the server's floor (4) and held 26 of 32 requests in its queue:
/// saturated, a gateway with this floor answered 42 000–48 000 req/s against 27 000–32 000
/// (docs/benchmarks.md, efficiency).
pub(crate) const GATEWAY_MIN_IN_FLIGHT: usize = 32;

/// How a service is admitted: the queue's capacity and the in-flight policy.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Admission {
    pub(crate) queue_capacity: usize,
    pub(crate) max_in_flight: MaxInFlight,
    pub(crate) min_in_flight: usize,
}

impl Admission {
    /// The server's defaults with a service's overrides.
    pub(crate) fn of(server: &ServerConfig, config: Option<&ServiceConfig>) -> Self {
        let forwards = config.is_some_and(|c| {
            matches!(
                c.kind(),
                ServiceKind::Gateway(_) | ServiceKind::RegistryGateway(_)
            )
        });
        let floor = if forwards {
            server.min_in_flight.max(GATEWAY_MIN_IN_FLIGHT)
        } else {
            server.min_in_flight
        };
        Admission {
            queue_capacity: config
                .and_then(|c| c.queue_capacity)
                .unwrap_or(server.queue_capacity),
            max_in_flight: config
                .and_then(|c| c.max_in_flight)
                .unwrap_or(server.max_in_flight),
            // A gateway gathering batches needs requests in flight to fill them: its
            // adaptive limit never goes below two batches' worth.
            min_in_flight: config
                .and_then(ServiceConfig::upstream_batching)
                .map_or(floor, |(items, _)| floor.max(items.saturating_mul(2))),
        }
    }

    fn gate(&self) -> Arc<Gate> {
        let policy = match self.max_in_flight {
            MaxInFlight::Fixed(n) => LimitPolicy::Fixed(n),
            MaxInFlight::Auto(_) => LimitPolicy::adaptive_with_floor(self.min_in_flight),
        };
        Gate::new(self.queue_capacity, policy)
    }
}

impl Service {
    /// A service answering with `soap` at `path`.
    pub(crate) fn new(
        name: String,
        path: String,
        soap: Arc<dyn SoapService>,
        plans: ServicePlans,
        admission: Admission,
        public_url: Option<String>,
    ) -> Self {
        Service {
            name,
            path,
            prefix: false,
            gateway: None,
            understood: soap.understood(),
            operations: soap.operations(),
            ultimate: soap.is_ultimate_receiver(),
            soap,
            plans,
            gate: admission.gate(),
            queue_capacity: admission.queue_capacity,
            public_url,
            event_source: None,
            shared_contexts: None,
            accept_streams: false,
            stream_sender: None,
            wsdl_rotation: None,
            async_replies: None,
            async_jobs: std::sync::Mutex::new(None),
            offers: None,
            qos_book: None,
            upstreams: None,
        }
    }

    /// The service for `config`; fails, with a reason naming the event source or context
    /// store, if its store cannot be opened, or the key and file when a gateway's TLS file
    /// cannot be used.
    pub(crate) fn from_config(
        config: &ServiceConfig,
        plans: ServicePlans,
        server: &ServerConfig,
        listen: std::net::SocketAddr,
        nats: Option<&lather_config::NatsConfig>,
        outbound: &lather_client::OutboundTls,
    ) -> Result<Self, NotBuilt> {
        let mut event_source = None;
        let mut shared_contexts = None;
        let mut qos_book_opened = None;
        let mut upstreams = None;
        let mut stream_sender = None;
        let mut gateway_handle = None;
        let soap: Arc<dyn SoapService> = match config.kind() {
            ServiceKind::Builtin(Builtin::Echo) => Arc::new(crate::echo::Echo),
            ServiceKind::Builtin(Builtin::EventSource) => {
                let source = source_settings(config, listen, outbound)
                    .and_then(|s| lather_eventing::EventSource::open(s).map_err(|e| e.to_string()))
                    .map_err(|e| format!("event source: {e}"))?;
                event_source = Some(source.clone());
                Arc::new(EventSourceService::new(source))
            }
            ServiceKind::Builtin(Builtin::ContextStore) => {
                let store: Arc<dyn lather_context::ContextStore> = if config.shares_contexts(nats) {
                    let deferred = Arc::new(lather_context::DeferredStore::new());
                    shared_contexts = Some(deferred.clone());
                    deferred
                } else {
                    local_context_store(config)?
                };
                Arc::new(context_store(config, server, store))
            }
            ServiceKind::Builtin(Builtin::Registry) => Arc::new(registry(config, server)),
            ServiceKind::Builtin(Builtin::QosBroker) => {
                let book = qos_book(config)?;
                qos_book_opened = Some(book.clone());
                Arc::new(lather_qos::broker::BrokerService::new(
                    book,
                    lather_compose::server_limits(server),
                    register_allow(config),
                ))
            }
            ServiceKind::Gateway(list) => {
                let tls = upstream_tls(config)?;
                stream_sender = streams_of(config, server, &tls)?;
                let g = Arc::new(
                    gateway(config, server, Backends::fixed(list.clone()), tls)
                        .with_streams(stream_sender.clone()),
                );
                upstreams = Some(g.backends().clone());
                gateway_handle = Some(g.clone());
                g
            }
            ServiceKind::RegistryGateway(source) => {
                let tls = upstream_tls(config)?;
                stream_sender = streams_of(config, server, &tls)?;
                let g = Arc::new(
                    gateway(
                        config,
                        server,
                        Backends::following(source, config.timeout(), outbound),
                        tls,
                    )
                    .with_streams(stream_sender.clone()),
                );
                upstreams = Some(g.backends().clone());
                gateway_handle = Some(g.clone());
                g
            }
        };
        let mut service = Service::new(
            config.name.get_ref().clone(),
            config.base_path().to_owned(),
            soap,
            plans,
            Admission::of(server, Some(config)),
            config.public_url(server),
        );
        service.prefix = config.path_prefix().is_some();
        service.gateway = gateway_handle;
        service.event_source = event_source;
        service.shared_contexts = shared_contexts;
        service.qos_book = qos_book_opened;
        service.upstreams = upstreams;
        service.accept_streams = config.accept_streams.as_ref().is_some_and(|a| *a.get_ref());
        service.stream_sender = stream_sender;
        service.wsdl_rotation = crate::wsdl_rotation::WsdlRotation::new(&config.wsdl_addresses());
        if !config.offers.is_empty() {
            let endpoint = config.public_url(server).unwrap_or_else(|| {
                let scheme = if server.tls.is_some() {
                    "https"
                } else {
                    "http"
                };
                format!("{scheme}://{listen}{}", config.base_path())
            });
            if endpoint.contains("://0.0.0.0") || endpoint.contains("://[::]") {
                tracing::warn!(
                    service = config.name.get_ref(),
                    %endpoint,
                    "QoS offers name an unspecified address as their endpoint: set public_url (or [server] public_url) so clients can call it"
                );
            }
            service.offers = Some(Arc::new(lather_qos::ServiceOffers::new(
                config.name.get_ref(),
                &endpoint,
                &config.offers,
            )));
        }
        if let Some(settings) = config.async_replies() {
            let schemes = ["http".to_owned(), "https".to_owned()];
            let policy = lather_eventing::DeliveryPolicy::new(&settings.allow, Some(&schemes))
                .map_err(|e| format!("reply_allow: {e}"))?
                .with_listen(listen)
                .with_tls(outbound.clone());
            if config.shares_async_replies(nats) {
                let replies = crate::async_reply::AsyncReplies::shared(&settings, policy);
                service.async_replies = Some(Arc::new(replies));
            } else {
                let (replies, jobs) = crate::async_reply::AsyncReplies::open(&settings, policy)
                    .map_err(|e| e.to_string())?;
                service.async_replies = Some(Arc::new(replies));
                service.async_jobs = std::sync::Mutex::new(Some(jobs));
            }
        }
        Ok(service)
    }
}

/// A gateway's sender of message streams, when `stream` is set: towards `https://`
/// upstreams with the gateway's own TLS settings `tls`.
fn streams_of(
    config: &ServiceConfig,
    server: &ServerConfig,
    tls: &crate::gateway::UpstreamTls,
) -> Result<Option<lather_context::stream::StreamSender>, String> {
    use lather_context::stream::{OnError, SenderSettings, StreamSender, StreamTransport};
    let transport = match config.stream_mode() {
        lather_config::StreamMode::Off => return Ok(None),
        lather_config::StreamMode::Tcp => StreamTransport::Tcp,
        lather_config::StreamMode::H2 => StreamTransport::H2,
    };
    let on_error = match config.stream_on_error.as_ref().map(|o| *o.get_ref()) {
        Some(lather_config::StreamOnError::Resend) => OnError::Resend,
        _ => OnError::Fault,
    };
    let settings = SenderSettings {
        transport,
        on_error,
        retry: std::time::Duration::from_secs(
            config.stream_retry_s.as_ref().map_or(60, |r| *r.get_ref()),
        ),
        timeout: config.timeout().min(std::time::Duration::from_secs(10)),
        max_message_bytes: server.max_message_bytes,
        max_streams: 1024,
        tls: tls.outbound(),
    };
    StreamSender::new(settings)
        .map(Some)
        .map_err(|e| format!("message streams: {e}"))
}

/// The bounds of a `context-store` service, from its keys (defaults where unset).
pub fn context_store_limits(config: &ServiceConfig) -> lather_context::StoreLimits {
    let defaults = lather_context::StoreLimits::default();
    let size = |v: Option<u64>, default: usize| {
        v.map_or(default, |v| usize::try_from(v).unwrap_or(usize::MAX))
    };
    let secs = |v: Option<u64>, default: std::time::Duration| {
        v.map_or(default, std::time::Duration::from_secs)
    };
    lather_context::StoreLimits {
        max_context_bytes: size(
            config.max_context_bytes.as_ref().map(|v| *v.get_ref()),
            defaults.max_context_bytes,
        ),
        max_contexts: size(
            config.max_contexts.as_ref().map(|v| *v.get_ref()),
            defaults.max_contexts,
        ),
        default_ttl: secs(
            config.context_ttl_s.as_ref().map(|v| *v.get_ref()),
            defaults.default_ttl,
        ),
        max_ttl: secs(
            config.max_context_ttl_s.as_ref().map(|v| *v.get_ref()),
            defaults.max_ttl,
        ),
    }
}

/// Why a service could not be made: a reason, and the span of the key at fault when it is
/// not the service as a whole.
#[derive(Debug)]
pub(crate) struct NotBuilt {
    pub(crate) span: Option<std::ops::Range<usize>>,
    pub(crate) reason: String,
}

impl From<String> for NotBuilt {
    fn from(reason: String) -> Self {
        NotBuilt { span: None, reason }
    }
}

/// A gateway's TLS towards `https://` upstreams; an error names the key's line.
fn upstream_tls(config: &ServiceConfig) -> Result<crate::gateway::UpstreamTls, NotBuilt> {
    crate::gateway::UpstreamTls::of(config).map_err(|(span, e)| NotBuilt {
        span: Some(span),
        reason: e.to_string(),
    })
}

/// A gateway service forwarding to `backends`, over TLS with `tls` to `https://` ones.
fn gateway(
    config: &ServiceConfig,
    server: &ServerConfig,
    backends: Arc<Backends>,
    tls: crate::gateway::UpstreamTls,
) -> Gateway {
    Gateway::new(
        config.name.get_ref().clone(),
        backends,
        config.timeout(),
        server.max_message_bytes,
        ResponsePolicy::new(
            &config.response_headers_remove(),
            &config.response_headers_set(),
            &config.response_headers_add(),
        ),
        config
            .identity_header
            .as_ref()
            .and_then(|h| http::HeaderName::from_bytes(h.get_ref().as_bytes()).ok()),
        tls,
    )
    .with_request_rules(RequestRules::new(
        &config.request_headers_remove(),
        &config.request_headers_set(),
        &config.request_headers_add(),
    ))
    .with_tuning(
        config
            .wsdl_cache()
            .map(|keep| (keep, config.wsdl_cache_documents())),
        config.compress_requests_from(),
    )
    .with_upstream_protocol(config.upstream_protocol(), config.upstream_connections())
    .with_failover(config.failover())
    .with_transfer_batching(config.upstream_batching())
    .with_access_log(server.access_log)
}

/// The bounds of a `registry` service, from its keys (defaults where unset).
pub fn registry_limits(config: &ServiceConfig) -> lather_context::RegistryLimits {
    let defaults = lather_context::RegistryLimits::default();
    lather_context::RegistryLimits {
        max_registrations: config
            .max_registrations
            .as_ref()
            .map_or(defaults.max_registrations, |v| {
                usize::try_from(*v.get_ref()).unwrap_or(usize::MAX)
            }),
        max_lease: config.max_lease_s.as_ref().map_or(defaults.max_lease, |v| {
            std::time::Duration::from_secs(*v.get_ref())
        }),
        ..defaults
    }
}

/// A `registry` service.
fn registry(config: &ServiceConfig, server: &ServerConfig) -> lather_context::RegistryService {
    lather_context::RegistryService::new(
        Arc::new(lather_context::Registry::new(registry_limits(config))),
        lather_compose::server_limits(server),
    )
}

/// Who may register offers with a `qos-broker` (`register_allow`; default this host).
pub fn register_allow(config: &ServiceConfig) -> Vec<lather_config::IpNet> {
    match &config.register_allow {
        Some(list) => list
            .get_ref()
            .iter()
            .filter_map(|n| n.get_ref().parse().ok())
            .collect(),
        None => ["127.0.0.0/8", "::1"]
            .iter()
            .filter_map(|n| n.parse().ok())
            .collect(),
    }
}

/// A `qos-broker` service's book: its offers in the SQLite file `store` (memory without
/// one).
fn qos_book(config: &ServiceConfig) -> Result<Arc<lather_qos::broker::OfferBook>, String> {
    use lather_qos::broker::{BookLimits, OfferBook, OfferStore};
    let registry = registry_limits(config);
    let limits = BookLimits {
        max_offers: registry.max_registrations,
        max_lease: registry.max_lease,
        max_per_owner: config
            .max_offers_per_owner
            .as_ref()
            .map_or(BookLimits::default().max_per_owner, |v| {
                usize::try_from(*v.get_ref()).unwrap_or(usize::MAX)
            }),
    };
    let path = config
        .store
        .as_ref()
        .map(|p| std::path::PathBuf::from(p.get_ref()));
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let book = OfferStore::open(path.as_deref())
        .and_then(|store| OfferBook::open(store, limits, now))
        .map_err(|e| format!("QoS broker: {e}"))?;
    Ok(Arc::new(book))
}

/// A local context store: its redb file when `store` is set, else memory.
fn local_context_store(
    config: &ServiceConfig,
) -> Result<Arc<dyn lather_context::ContextStore>, String> {
    Ok(match &config.store {
        Some(path) => Arc::new(
            lather_context::RedbStore::open(std::path::Path::new(path.get_ref()))
                .map_err(|e| e.to_string())?,
        ),
        None => Arc::new(lather_context::MemoryStore::new()),
    })
}

/// A `context-store` service over `store`.
fn context_store(
    config: &ServiceConfig,
    server: &ServerConfig,
    store: Arc<dyn lather_context::ContextStore>,
) -> lather_context::ContextStoreService {
    let contexts = lather_context::Contexts::new(store, context_store_limits(config));
    lather_context::ContextStoreService::new(contexts, lather_compose::server_limits(server))
}

/// The event source's settings from the service's keys.
fn source_settings(
    config: &ServiceConfig,
    listen: std::net::SocketAddr,
    outbound: &lather_client::OutboundTls,
) -> Result<lather_eventing::SourceSettings, String> {
    let mut settings = lather_eventing::SourceSettings {
        notify_policy: delivery_policy(config)
            .map_err(|(_, why)| why)?
            .with_listen(listen)
            .with_tls(outbound.clone()),
        ..lather_eventing::SourceSettings::default()
    };
    if let Some(max) = &config.max_subscriptions_per_identity {
        settings.max_subscriptions_per_identity =
            usize::try_from(*max.get_ref()).unwrap_or(usize::MAX);
    }
    if let Some(budget) = &config.filter_budget {
        settings.filter_budget = *budget.get_ref();
    }
    if let Some(store) = &config.store {
        settings.store = Some(store.get_ref().into());
    }
    if let Some(max) = &config.max_expires_s {
        settings.max_expires = std::time::Duration::from_secs(*max.get_ref());
    }
    if let Some(action) = &config.event_action {
        settings.default_action = action.get_ref().clone();
    }
    if let Some(min) = &config.compress_min_bytes {
        settings.compress_min_bytes = usize::try_from(*min.get_ref()).unwrap_or(usize::MAX);
    }
    if let Some(bytes) = &config.sink_queue_bytes {
        settings.sink_queue_bytes = *bytes.get_ref();
    }
    if let Some(bytes) = &config.queue_bytes_total {
        settings.queue_bytes_total = *bytes.get_ref();
    }
    if let Some(ms) = &config.sink_write_timeout_ms {
        settings.retry.timeout = std::time::Duration::from_millis(*ms.get_ref());
    }
    if let Some(ms) = &config.delivery_wait_ms {
        settings.delivery_wait = std::time::Duration::from_millis(*ms.get_ref());
    }
    Ok(settings)
}

/// The event source's delivery policy from `notify_allow` and `notify_schemes`; an entry
/// that cannot be read is an error with its span.
pub(crate) fn delivery_policy(
    config: &ServiceConfig,
) -> Result<lather_eventing::DeliveryPolicy, (std::ops::Range<usize>, String)> {
    let mut allow = Vec::new();
    for entry in config.notify_allow.iter().flat_map(|l| l.get_ref()) {
        lather_eventing::DeliveryPolicy::new(std::slice::from_ref(entry.get_ref()), None)
            .map_err(|e| (entry.span(), e.to_string()))?;
        allow.push(entry.get_ref().clone());
    }
    let schemes: Option<Vec<String>> = config
        .notify_schemes
        .as_ref()
        .map(|l| l.get_ref().iter().map(|s| s.get_ref().clone()).collect());
    lather_eventing::DeliveryPolicy::new(&allow, schemes.as_deref()).map_err(|e| {
        let span = config
            .notify_schemes
            .as_ref()
            .map_or(config.path.span(), |s| s.span());
        (span, e.to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batching_gateway_keeps_two_batches_in_flight_at_least() {
        let text = "[[service]]\nname = \"g\"\npath = \"/g\"\nupstream = [\"http://127.0.0.1:9/ws\"]\n\
                    batch_upstream = true\nbatch_max_items = 50\n\n\
                    [[service]]\nname = \"e\"\npath = \"/e\"\nbuiltin = \"echo\"\n";
        let config = lather_config::Config::from_toml(text, "t").unwrap();
        let batching = Admission::of(&config.server, Some(&config.services[0]));
        let plain = Admission::of(&config.server, Some(&config.services[1]));
        assert_eq!(batching.min_in_flight, 100);
        assert_eq!(plain.min_in_flight, config.server.min_in_flight);
    }

    #[test]
    fn a_gateway_keeps_its_own_floor_and_a_higher_server_floor_wins() {
        let services = "[[service]]\nname = \"g\"\npath = \"/g\"\nupstream = [\"http://127.0.0.1:9/ws\"]\n\n\
                        [[service]]\nname = \"e\"\npath = \"/e\"\nbuiltin = \"echo\"\n";
        let config = lather_config::Config::from_toml(services, "t").unwrap();
        let gateway = Admission::of(&config.server, Some(&config.services[0]));
        let echo = Admission::of(&config.server, Some(&config.services[1]));
        assert_eq!(gateway.min_in_flight, GATEWAY_MIN_IN_FLIGHT);
        assert_eq!(echo.min_in_flight, 4);
        let text = format!("[server]\nmin_in_flight = 64\n\n{services}");
        let config = lather_config::Config::from_toml(&text, "t").unwrap();
        let gateway = Admission::of(&config.server, Some(&config.services[0]));
        assert_eq!(gateway.min_in_flight, 64);
    }
}
