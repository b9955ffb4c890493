//! A configured service: its name, path and behaviour.

use crate::gateway::Gateway;
use lather_config::{Builtin, ServiceConfig, ServiceKind};
use lather_handlers::ServicePlans;

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
}

impl Service {
    pub(crate) fn from_config(
        config: &ServiceConfig,
        plans: ServicePlans,
        max_message_bytes: usize,
    ) -> Self {
        let behaviour = match config.kind() {
            ServiceKind::Builtin(Builtin::Echo) => Behaviour::Echo,
            ServiceKind::Gateway(upstreams) => Behaviour::Gateway(Box::new(Gateway::new(
                upstreams.clone(),
                config.timeout(),
                max_message_bytes,
            ))),
        };
        Service {
            name: config.name.get_ref().clone(),
            path: config.path.get_ref().clone(),
            behaviour,
            plans,
        }
    }
}
