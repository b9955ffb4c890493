//! What every request needs: the services by path, the limits and the metrics.

use crate::metrics::Metrics;
use crate::service::Service;
use lather_config::ServerConfig;
use lather_envelope::Limits;
use lather_pipeline::CpuPool;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;

/// Shared, read-only state of a running server (metrics use interior mutability).
#[derive(Debug)]
pub(crate) struct State {
    /// Services by path (a service with subpaths is there under each).
    pub(crate) services: HashMap<String, Arc<Service>>,
    pub(crate) limits: Limits,
    /// How fast request bodies must arrive.
    pub(crate) body: crate::body::BodyPace,
    pub(crate) metrics: Metrics,
    pub(crate) listen: SocketAddr,
    /// `"https"` when the listener speaks TLS, else `"http"`.
    pub(crate) scheme: &'static str,
    /// The link to NATS of the remote handlers, if any handler is remote.
    pub(crate) link: Option<Arc<lather_remote::Link>>,
    /// What `/health` reports on.
    pub(crate) health: crate::health::Health,
    /// Who may read `/health` and `/metrics` (empty: everyone).
    pub(crate) admin_allow: Vec<lather_config::IpNet>,
    /// Where CPU-bound handlers run.
    pub(crate) cpu_pool: CpuPool,
    /// When answers are compressed.
    pub(crate) compression: Arc<crate::compress::ResponseCompression>,
    /// The receiving side of message streams (`[stream]`), if configured.
    pub(crate) streams: Option<Arc<crate::stream_acceptor::StreamAcceptor>>,
    /// Where each request's phases are counted (`[server] phase_metrics`), if they are.
    pub(crate) phases: Option<crate::timing::PhaseHistograms>,
    /// When answers carry `Server-Timing` (`[server] server_timing`).
    pub(crate) server_timing: lather_config::ServerTiming,
    /// The most items one batch may hold (`[server] max_batch_items`).
    pub(crate) max_batch_items: usize,
    /// Where the services' offers are registered (`[qos] broker`), if anywhere.
    pub(crate) offer_broker: Option<crate::offer_broker::OfferBroker>,
}

impl State {
    /// Every service once, in no particular order (the map holds a service under each
    /// of its paths).
    pub(crate) fn unique_services(&self) -> Vec<Arc<Service>> {
        let mut unique: Vec<Arc<Service>> = Vec::new();
        for service in self.services.values() {
            if !unique.iter().any(|s| Arc::ptr_eq(s, service)) {
                unique.push(service.clone());
            }
        }
        unique
    }

    /// The state serving `services` (in order) with the `[server]` settings `server`.
    pub(crate) fn assemble(
        server: &ServerConfig,
        services: Vec<Arc<Service>>,
        listen: SocketAddr,
        link: Option<Arc<lather_remote::Link>>,
        cpu_pool: CpuPool,
        compression: lather_qos::QosPolicy,
    ) -> Result<Self, crate::ServeError> {
        let mut by_path: HashMap<String, Arc<Service>> = HashMap::new();
        for service in &services {
            let paths = std::iter::once(service.path.clone()).chain(
                service
                    .soap
                    .subpaths()
                    .into_iter()
                    .map(|sub| format!("{}{sub}", service.path)),
            );
            for path in paths {
                if let Some(first) = by_path.get(&path) {
                    // A subpath yields to a service configured at that path.
                    if path != service.path {
                        continue;
                    }
                    if first.path == path {
                        return Err(crate::ServeError::DuplicatePath {
                            path,
                            first: first.name.clone(),
                            second: service.name.clone(),
                        });
                    }
                }
                by_path.insert(path, service.clone());
            }
        }
        let mut metrics = Metrics::new(services.iter().map(|s| s.name.as_str()));
        metrics.register_collector(crate::collect::EngineCollector::new(services.clone()));
        let phases = server.phase_metrics.then(|| {
            crate::timing::PhaseHistograms::new(
                services
                    .iter()
                    .map(|s| s.name.as_str())
                    .chain([crate::metrics::NO_SERVICE]),
            )
        });
        let compression = Arc::new(crate::compress::ResponseCompression {
            enabled: server.compress_responses,
            min_bytes: server.compress_min_bytes,
            policy: compression,
            compressed: Default::default(),
            plain_for_load: Default::default(),
        });
        metrics.register_collector(crate::compress::CompressionCollector(compression.clone()));
        if let Some(phases) = &phases {
            metrics.register_collector(phases.clone());
        }
        Ok(State {
            services: by_path,
            limits: lather_compose::server_limits(server),
            body: crate::body::BodyPace::from_config(server),
            metrics,
            listen,
            scheme: if server.tls.is_some() {
                "https"
            } else {
                "http"
            },
            link,
            health: crate::health::Health::new(&services),
            admin_allow: server.admin_allow.clone(),
            compression,
            cpu_pool,
            streams: None,
            phases,
            server_timing: server.server_timing,
            max_batch_items: server.max_batch_items,
            offer_broker: None,
        })
    }
}
