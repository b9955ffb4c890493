//! What every request needs: the services by path, the limits and the metrics.

use crate::metrics::Metrics;
use crate::service::{Behaviour, PUBLISH_SUFFIX, Service};
use lather_config::Config;
use lather_envelope::Limits;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;

/// Shared, read-only state of a running server (metrics use interior mutability).
#[derive(Debug)]
pub(crate) struct State {
    pub(crate) services: HashMap<String, Arc<Service>>,
    pub(crate) limits: Limits,
    /// How fast request bodies must arrive.
    pub(crate) body: crate::body::BodyPace,
    pub(crate) metrics: Metrics,
    pub(crate) listen: SocketAddr,
    /// The link to NATS of the remote handlers, if any handler is remote.
    pub(crate) link: Option<Arc<lather_remote::Link>>,
    /// What `/health` reports on.
    pub(crate) health: crate::health::Health,
    /// Who may read `/health` and `/metrics` (empty: everyone).
    pub(crate) admin_allow: Vec<lather_config::IpNet>,
}

impl State {
    /// The state for `config`; fails if a handler or a flow is not valid.
    pub(crate) fn new(
        config: &Config,
        listen: SocketAddr,
    ) -> Result<Self, lather_config::ConfigError> {
        // The plans' `publish` handlers find the event sources opened below here.
        let sinks = lather_handlers::EventSinks::default();
        let lather_compose::Services { plans, link } =
            lather_compose::build_services_with(config, &sinks)?;
        let server = &config.server;
        let limits = Limits {
            max_message_bytes: server.max_message_bytes,
            max_depth: server.max_depth,
            max_attributes: server.max_attributes,
        };
        let mut services: HashMap<String, Arc<Service>> = HashMap::new();
        for (svc, plans) in config.services.iter().zip(plans) {
            if matches!(
                svc.kind(),
                lather_config::ServiceKind::Builtin(lather_config::Builtin::EventSource)
            ) {
                crate::service::delivery_policy(svc)
                    .map_err(|(span, why)| config.error_at(span, format!("event source: {why}")))?;
            }
            let service = Service::from_config(svc, plans, server, listen)
                .map_err(|e| config.error_at(svc.path.span(), format!("event source: {e}")))?;
            let service = Arc::new(service);
            if let Behaviour::EventSource(source) = &service.behaviour {
                sinks.register(
                    &service.name,
                    Arc::new(crate::event_sink::SourceSink(source.clone())),
                );
                let publish = format!("{}{PUBLISH_SUFFIX}", service.path);
                services.entry(publish).or_insert_with(|| service.clone());
            }
            services.insert(service.path.clone(), service);
        }
        let mut metrics = Metrics::new(config.services.iter().map(|s| s.name.get_ref().as_str()));
        // An event source answers at two paths; the collector counts each service once.
        let mut all: Vec<Arc<Service>> = Vec::new();
        for service in services.values() {
            if !all.iter().any(|a| Arc::ptr_eq(a, service)) {
                all.push(service.clone());
            }
        }
        metrics.register_collector(crate::collect::EngineCollector::new(all));
        let health = crate::health::Health::new(config, &services);
        Ok(State {
            services,
            limits,
            body: crate::body::BodyPace::from_config(server),
            metrics,
            listen,
            link,
            health,
            admin_allow: server.admin_allow.clone(),
        })
    }
}
