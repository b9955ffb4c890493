//! `GET /health`: `ok`, or `degraded` naming each service whose admission gate is full.

use crate::service::Service;
use std::sync::Arc;

/// The services `/health` looks at, each with its queue capacity.
#[derive(Debug, Default)]
pub(crate) struct Health {
    services: Vec<(Arc<Service>, usize)>,
}

impl Health {
    /// Looks at `services` (each once), with their queue capacities.
    pub(crate) fn new(services: &[Arc<Service>]) -> Self {
        Health {
            services: services
                .iter()
                .map(|s| (s.clone(), s.queue_capacity))
                .collect(),
        }
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
