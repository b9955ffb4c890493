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
    /// Services by path (a service with subpaths is there under each; a prefix service
    /// under its configured `/prefix/*`).
    pub(crate) services: HashMap<String, Arc<Service>>,
    /// The services answering a prefix (`path = "/api/*"`), longest prefix first.
    pub(crate) prefixes: Vec<Arc<Service>>,
    /// The proxies whose `Forwarded` and `X-Forwarded-*` headers are believed
    /// (`[server] trusted_proxies`).
    pub(crate) trusted_proxies: Vec<lather_config::IpNet>,
    pub(crate) limits: Limits,
    /// How fast request bodies must arrive.
    pub(crate) body: crate::body::BodyPace,
    pub(crate) metrics: Metrics,
    pub(crate) listen: SocketAddr,
    /// `Https` when the listener speaks TLS, else `Http`.
    pub(crate) scheme: crate::scheme::Scheme,
    /// The link to NATS of the remote handlers, if any handler is remote.
    pub(crate) link: Option<Arc<lather_remote::Link>>,
    /// What `/health` reports on.
    pub(crate) health: crate::health::Health,
    /// What `/ready` reports on.
    pub(crate) readiness: crate::ready::Readiness,
    /// Whether each answer is logged on `lather::access` (`[server] access_log`).
    pub(crate) access_log: bool,
    /// Who may read `/health`, `/ready` and `/metrics` (empty: everyone).
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
    /// The service answering `path`: the one at exactly that path, else the one with the
    /// longest prefix that `path` is or lies below, unless the rest of the path holds a
    /// dot segment (`.`, `..`, also percent-encoded), which could climb out of the
    /// upstream's path.
    pub(crate) fn route(&self, path: &str) -> Option<&Arc<Service>> {
        if let Some(service) = self.services.get(path) {
            return Some(service);
        }
        self.prefixes.iter().find(|service| {
            path.strip_prefix(service.path.as_str())
                .is_some_and(|rest| {
                    (rest.is_empty() || rest.starts_with('/')) && !has_dot_segment(rest)
                })
        })
    }

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
        carried: Option<&Metrics>,
    ) -> Result<Self, crate::ServeError> {
        let mut by_path: HashMap<String, Arc<Service>> = HashMap::new();
        let mut prefixes = Vec::new();
        for service in &services {
            if service.prefix {
                prefixes.push(service.clone());
                by_path.insert(format!("{}/*", service.path), service.clone());
                continue;
            }
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
        let names = services.iter().map(|s| s.name.as_str());
        let mut metrics = match carried {
            Some(previous) => previous.carried(names, server.metrics_max_operations),
            None => Metrics::new(names, server.metrics_max_operations),
        };
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
        prefixes.sort_by_key(|s| std::cmp::Reverse(s.path.len()));
        Ok(State {
            services: by_path,
            prefixes,
            trusted_proxies: server.trusted_proxies.clone(),
            limits: lather_compose::server_limits(server),
            body: crate::body::BodyPace::from_config(server),
            metrics,
            listen,
            scheme: crate::scheme::Scheme::of_listener(server.tls.is_some()),
            link,
            health: crate::health::Health::new(&services),
            readiness: crate::ready::Readiness::new(&services),
            access_log: server.access_log,
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

/// Whether `path` has a `.` or `..` segment, plain or percent-encoded.
fn has_dot_segment(path: &str) -> bool {
    path.split('/').any(|segment| {
        let decoded = segment.replace("%2e", ".").replace("%2E", ".");
        decoded == "." || decoded == ".."
    })
}

#[cfg(test)]
mod tests {
    use super::has_dot_segment;

    #[test]
    fn dot_segments_are_found_plain_and_encoded() {
        for dotted in ["/..", "/a/../b", "/.", "/a/%2e%2E/b", "/%2E", "/a/./"] {
            assert!(has_dot_segment(dotted), "{dotted}");
        }
        for plain in ["", "/", "/a/b", "/a..b", "/.hidden", "/a/...", "/%2e%2ex"] {
            assert!(!has_dot_segment(plain), "{plain}");
        }
    }
}
