//! `GET /health`: `ok`, or `degraded` naming each service whose admission gate is full.

use crate::service::Service;
use lather_config::Config;
use std::collections::HashMap;
use std::sync::Arc;

/// The services `/health` looks at, each with its queue capacity.
#[derive(Debug, Default)]
pub(crate) struct Health {
    services: Vec<(Arc<Service>, usize)>,
}

impl Health {
    /// The distinct services of `by_path`, with their capacities from `config`.
    pub(crate) fn new(config: &Config, by_path: &HashMap<String, Arc<Service>>) -> Self {
        let mut services: Vec<(Arc<Service>, usize)> = Vec::new();
        for svc in &config.services {
            let Some(service) = by_path.get(svc.path.get_ref()) else {
                continue;
            };
            let capacity = svc.queue_capacity.unwrap_or(config.server.queue_capacity);
            services.push((service.clone(), capacity));
        }
        Health { services }
    }

    /// The services that cannot take a request now: every slot in flight and the queue
    /// full (a new request would be refused with 503).
    pub(crate) fn busy(&self) -> Vec<&str> {
        self.services
            .iter()
            .filter(|(service, capacity)| {
                let stats = service.gate.stats();
                stats.in_flight >= stats.limit && stats.queued >= *capacity
            })
            .map(|(service, _)| service.name.as_str())
            .collect()
    }

    /// The `/health` answer: `(true, "ok\n")` or `(false, "degraded: a busy, b busy\n")`.
    pub(crate) fn report(&self) -> (bool, String) {
        let busy = self.busy();
        if busy.is_empty() {
            return (true, "ok\n".to_owned());
        }
        let list: Vec<String> = busy.iter().map(|name| format!("{name} busy")).collect();
        (false, format!("degraded: {}\n", list.join(", ")))
    }
}
