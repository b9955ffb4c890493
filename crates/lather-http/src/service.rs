//! A configured service: its name, path and behaviour.

use crate::gateway::{Gateway, ResponsePolicy};
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
    /// A WS-Eventing event source and subscription manager; events published at
    /// `{path}/publish`.
    EventSource(lather_eventing::EventSource),
}

/// The path events are published at, below an event source's path.
pub(crate) const PUBLISH_SUFFIX: &str = "/publish";

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
    /// The configured URL clients reach the service at, if any (`public_url`).
    pub(crate) public_url: Option<String>,
}

impl Behaviour {
    /// Whether the service answers messages itself (the ultimate receiver) rather than
    /// forwarding them.
    pub(crate) fn is_ultimate_receiver(&self) -> bool {
        matches!(self, Behaviour::Echo | Behaviour::EventSource(_))
    }

    /// Header blocks the behaviour itself processes.
    fn understood(&self) -> Vec<QName> {
        match self {
            Behaviour::Echo => crate::echo::UNDERSTOOD
                .iter()
                .map(|(ns, local)| QName::new(*ns, *local))
                .collect(),
            Behaviour::EventSource(_) => crate::echo::UNDERSTOOD
                .iter()
                .chain(EVENTING_UNDERSTOOD.iter())
                .map(|(ns, local)| QName::new(*ns, *local))
                .collect(),
            Behaviour::Gateway(_) => Vec::new(),
        }
    }
}

/// Header blocks an event source processes: the addressing headers it reads and the
/// subscription identifiers and publish topic.
const EVENTING_UNDERSTOOD: [(&str, &str); 9] = [
    (lather_envelope::WSA10_NS, "Action"),
    (lather_envelope::WSA10_NS, "To"),
    (lather_envelope::WSA10_NS, "ReplyTo"),
    (lather_envelope::WSA04_NS, "Action"),
    (lather_envelope::WSA04_NS, "To"),
    (lather_envelope::WSA04_NS, "ReplyTo"),
    (lather_envelope::WSE04_NS, "Identifier"),
    (lather_eventing::LATHER_EVENTING_NS, "Identifier"),
    (lather_eventing::LATHER_EVENTING_NS, "Topic"),
];

impl Service {
    /// The service for `config`; fails (with the reason) if an event source's store cannot
    /// be opened.
    pub(crate) fn from_config(
        config: &ServiceConfig,
        plans: ServicePlans,
        server: &ServerConfig,
        listen: std::net::SocketAddr,
    ) -> Result<Self, String> {
        let max_message_bytes = server.max_message_bytes;
        let capacity = config.queue_capacity.unwrap_or(server.queue_capacity);
        let policy = match config.max_in_flight.unwrap_or(server.max_in_flight) {
            MaxInFlight::Fixed(n) => LimitPolicy::Fixed(n),
            MaxInFlight::Auto(_) => LimitPolicy::adaptive_with_floor(server.min_in_flight),
        };
        let behaviour = match config.kind() {
            ServiceKind::Builtin(Builtin::Echo) => Behaviour::Echo,
            ServiceKind::Builtin(Builtin::EventSource) => Behaviour::EventSource(
                lather_eventing::EventSource::open(source_settings(config, listen)?)
                    .map_err(|e| e.to_string())?,
            ),
            ServiceKind::Gateway(upstreams) => Behaviour::Gateway(Box::new(Gateway::new(
                config.name.get_ref().clone(),
                upstreams.clone(),
                config.timeout(),
                max_message_bytes,
                ResponsePolicy::new(
                    &config.response_headers_remove(),
                    &config.response_headers_set(),
                ),
            ))),
        };
        let understood = behaviour.understood();
        Ok(Service {
            name: config.name.get_ref().clone(),
            path: config.path.get_ref().clone(),
            behaviour,
            plans,
            gate: Gate::new(capacity, policy),
            understood,
            public_url: config.public_url(server),
        })
    }
}

/// The event source's settings from the service's keys.
fn source_settings(
    config: &ServiceConfig,
    listen: std::net::SocketAddr,
) -> Result<lather_eventing::SourceSettings, String> {
    let mut settings = lather_eventing::SourceSettings {
        notify_policy: delivery_policy(config)
            .map_err(|(_, why)| why)?
            .with_listen(listen),
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
