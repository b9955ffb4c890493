//! What a configuration's services are made of, shared by binding a server and reloading
//! it: the services with their plans, and the metrics read at scrape time that follow them.

use crate::ServeError;
use crate::service::Service;
use crate::state::State;
use lather_compose::Composer;
use lather_config::Config;
use lather_pipeline::Resources;
use std::net::SocketAddr;
use std::sync::Arc;

/// Registers the collectors read at scrape time that depend on the services: offers'
/// prices, gateway backends, message streams.
pub(crate) fn register_collectors(state: &mut State) {
    let unique = state.unique_services();
    if unique.iter().any(|s| s.offers.is_some()) {
        state
            .metrics
            .register_collector(crate::collect_offers::OffersCollector(unique.clone()));
    }
    if unique.iter().any(|s| s.upstreams.is_some()) {
        state
            .metrics
            .register_collector(crate::collect_upstreams::UpstreamCollector(unique.clone()));
    }
    state
        .metrics
        .register_collector(crate::collect_streams::StreamCollector::new(
            unique,
            state.streams.clone(),
        ));
}

/// The configuration's services with their plans, and the NATS link of its remote handlers;
/// a service named as one of `carried` is that running service (a reload keeps it).
#[expect(clippy::type_complexity, reason = "a private pair")]
pub(crate) fn configured(
    composer: &Composer,
    config: &Config,
    listen: SocketAddr,
    carried: &[Arc<Service>],
) -> Result<(Vec<Arc<Service>>, Option<Arc<lather_remote::Link>>), ServeError> {
    // The plans' `publish` handlers find the event sources opened below here.
    let sinks = lather_handlers::EventSinks::default();
    let outbound = crate::outbound_tls::load(config)?;
    let mut resources = Resources::new();
    resources.insert(sinks.clone());
    // `notify` handlers verify https:// sinks with the server's outbound trust.
    resources.insert(outbound.clone());
    let lather_compose::Services { plans, link } = composer.services(config, &resources)?;
    let mut services = Vec::new();
    for (svc, plans) in config.services.iter().zip(plans) {
        if let Some(kept) = carried.iter().find(|s| s.name == *svc.name.get_ref()) {
            if let Some(source) = &kept.event_source {
                sinks.register(
                    &kept.name,
                    Arc::new(crate::event_sink::SourceSink(source.clone())),
                );
            }
            services.push(kept.clone());
            continue;
        }
        if matches!(
            svc.kind(),
            lather_config::ServiceKind::Builtin(lather_config::Builtin::EventSource)
        ) {
            crate::service::delivery_policy(svc)
                .map_err(|(span, why)| config.error_at(span, format!("event source: {why}")))?;
        }
        let service = Service::from_config(
            svc,
            plans,
            &config.server,
            listen,
            config.nats.as_ref(),
            &outbound,
        )
        .map_err(|e| config.error_at(e.span.unwrap_or_else(|| svc.path.span()), e.reason))?;
        if let Some(source) = &service.event_source {
            sinks.register(
                &service.name,
                Arc::new(crate::event_sink::SourceSink(source.clone())),
            );
        }
        services.push(Arc::new(service));
    }
    Ok((services, link))
}
