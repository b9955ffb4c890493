//! A configured service: its name, path and behaviour.

use crate::gateway::Gateway;
use lather_config::{Builtin, MaxInFlight, ServerConfig, ServiceConfig, ServiceKind};
use lather_envelope::QName;
use lather_handlers::ServicePlans;
use lather_pipeline::{Gate, LimitPolicy};
use std::sync::Arc;

/// What a service does with a request.
#[derive(Debug)]
pub(crate) enum Behaviour {
    /// The built-in echo.
    Echo,
    /// Forward to backends.
    Gateway(Box<Gateway>),
}

/// One service at one path.
#[derive(Debug)]
pub(crate) struct Service {
    pub(crate) name: String,
    pub(crate) path: String,
    pub(crate) behaviour: Behaviour,
    /// The request and response handler stages.
    pub(crate) plans: ServicePlans,
    /// Admission: the bounded queue and the in-flight window.
    pub(crate) gate: Arc<Gate>,
    /// Header blocks the service itself understands (its handlers' are added per message,
    /// from the plan the message takes).
    pub(crate) understood: Vec<QName>,
}

impl Behaviour {
    /// Whether the service answers messages itself (the ultimate receiver) rather than
    /// forwarding them.
    pub(crate) fn is_ultimate_receiver(&self) -> bool {
        matches!(self, Behaviour::Echo)
    }

    /// Header blocks the behaviour itself processes.
    fn understood(&self) -> Vec<QName> {
        match self {
            Behaviour::Echo => crate::echo::UNDERSTOOD
                .iter()
                .map(|(ns, local)| QName::new(*ns, *local))
                .collect(),
            Behaviour::Gateway(_) => Vec::new(),
        }
    }
}

impl Service {
    pub(crate) fn from_config(
        config: &ServiceConfig,
        plans: ServicePlans,
        server: &ServerConfig,
    ) -> Self {
        let max_message_bytes = server.max_message_bytes;
        let capacity = config.queue_capacity.unwrap_or(server.queue_capacity);
        let policy = match config.max_in_flight.unwrap_or(server.max_in_flight) {
            MaxInFlight::Fixed(n) => LimitPolicy::Fixed(n),
            MaxInFlight::Auto(_) => LimitPolicy::adaptive(),
        };
        let behaviour = match config.kind() {
            ServiceKind::Builtin(Builtin::Echo) => Behaviour::Echo,
            ServiceKind::Gateway(upstreams) => Behaviour::Gateway(Box::new(Gateway::new(
                upstreams.clone(),
                config.timeout(),
                max_message_bytes,
            ))),
        };
        let understood = behaviour.understood();
        Service {
            name: config.name.get_ref().clone(),
            path: config.path.get_ref().clone(),
            behaviour,
            plans,
            gate: Gate::new(capacity, policy),
            understood,
        }
    }
}
