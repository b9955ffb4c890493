//! `GET /ready`: whether requests sent now could be answered — `ready`, or `not ready`
//! with one reason per problem.
//!
//! Not ready when: the server is shutting down; a NATS connection lather holds (remote
//! handlers, shared stores) is down; a service says it cannot answer
//! ([`SoapService::ready`](lather_pipeline::SoapService::ready): a gateway with no backend).
//! Stores (redb, SQLite, JetStream buckets) are opened before the listener is bound, so a
//! server that answers has them open. `/health` instead says whether the process is alive
//! and not saturated.

use crate::service::Service;
use lather_remote::Link;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// What `/ready` looks at.
#[derive(Debug, Default)]
pub(crate) struct Readiness {
    services: Vec<Arc<Service>>,
    nats: Vec<Arc<Link>>,
    stopping: AtomicBool,
}

impl Readiness {
    /// Looks at `services` (each once, in this order).
    pub(crate) fn new(services: &[Arc<Service>]) -> Self {
        Readiness {
            services: services.to_vec(),
            ..Readiness::default()
        }
    }

    /// Also looks at the NATS connection of `link` (once, however often it is given).
    pub(crate) fn watch_nats(&mut self, link: Arc<Link>) {
        if !self.nats.iter().any(|l| Arc::ptr_eq(l, &link)) {
            self.nats.push(link);
        }
    }

    /// From now on the server is not ready: it is shutting down.
    pub(crate) fn stop(&self) {
        self.stopping.store(true, Ordering::Relaxed);
    }

    /// The reasons the server is not ready now; empty when it is.
    pub(crate) fn reasons(&self) -> Vec<String> {
        let mut reasons = Vec::new();
        if self.stopping.load(Ordering::Relaxed) {
            reasons.push("shutting down".to_owned());
        }
        if self.nats.iter().any(|link| link.available().is_none()) {
            reasons.push("nats unreachable".to_owned());
        }
        for service in &self.services {
            if let lather_pipeline::Ready::No(why) = service.soap.ready() {
                reasons.push(format!("{}: {why}", service.name));
            }
        }
        reasons
    }

    /// The `/ready` answer: `(true, "ready\n")`, or `(false, "not ready: a; b\n")`.
    pub(crate) fn report(&self) -> (bool, String) {
        let reasons = self.reasons();
        if reasons.is_empty() {
            (true, "ready\n".to_owned())
        } else {
            (false, format!("not ready: {}\n", reasons.join("; ")))
        }
    }
}
