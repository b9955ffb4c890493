//! `monitor`: counts messages, bytes and clients per operation, for the metrics endpoint.

use lather_pipeline::{
    Access, BuildEnv, Handler, HandlerFuture, HandlerKind, Message, Observation, ObservationKind,
    Parts, SettingsError, Verdict,
};
use serde::Deserialize;
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;
use std::sync::Mutex;

/// Counts, per operation (the Body's first child, in Clark notation): messages, bytes, the
/// distinct clients seen and each client's messages. Exported at `/metrics` as
/// `lather_monitor_messages_total`, `lather_monitor_bytes_total`,
/// `lather_monitor_clients` and `lather_monitor_client_messages_total` (labels `service`,
/// `handler`, `operation`, `client`). Rates come from the counters (`rate()` in PromQL);
/// the mean size is bytes / messages.
///
/// At most `max_clients` clients are tracked one by one per operation; the rest are
/// counted together as `client="other"`, so a flood of addresses cannot grow memory or the
/// metrics without bound.
#[derive(Debug)]
pub struct Monitor {
    max_clients: usize,
    operations: Mutex<HashMap<String, OperationStats>>,
}

#[derive(Debug, Default)]
struct OperationStats {
    messages: u64,
    bytes: u64,
    /// Messages per client address (`None`: the address is not known).
    clients: HashMap<Option<IpAddr>, u64>,
    other_clients: u64,
}

/// Label used for messages without an operation and clients beyond the cap.
const OTHER: &str = "other";

impl Monitor {
    /// Tracks at most `max_clients` clients one by one per operation.
    pub fn new(max_clients: usize) -> Self {
        Monitor {
            max_clients,
            operations: Mutex::new(HashMap::new()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, OperationStats>> {
        // Counters only: a panic mid-update leaves at worst one count off.
        self.operations.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Handler for Monitor {
    fn access(&self) -> Access {
        Access::read_only(Parts::none().body())
    }

    fn call<'a>(&'a self, message: &'a Message) -> HandlerFuture<'a> {
        Box::pin(async move {
            let envelope = message.envelope();
            let operation = envelope
                .operation()
                .map_or_else(|| OTHER.to_owned(), ToString::to_string);
            let client = message.context().client;
            let mut ops = self.lock();
            let stats = ops.entry(operation).or_default();
            stats.messages += 1;
            stats.bytes += envelope.as_bytes().len() as u64;
            if let Some(n) = stats.clients.get_mut(&client) {
                *n += 1;
            } else if stats.clients.len() < self.max_clients {
                stats.clients.insert(client, 1);
            } else {
                stats.other_clients += 1;
            }
            Verdict::proceed()
        })
    }

    fn observations(&self) -> Vec<Observation> {
        let ops = self.lock();
        let mut out = Vec::new();
        for (operation, stats) in ops.iter() {
            let op = || vec![("operation", operation.clone())];
            out.push(Observation {
                name: "monitor_messages",
                help: "Messages seen by a monitor handler, by operation",
                kind: ObservationKind::Counter,
                labels: op(),
                value: stats.messages,
            });
            out.push(Observation {
                name: "monitor_bytes",
                help: "Envelope bytes seen by a monitor handler, by operation",
                kind: ObservationKind::Counter,
                labels: op(),
                value: stats.bytes,
            });
            let distinct = stats.clients.len() as u64 + u64::from(stats.other_clients > 0);
            out.push(Observation {
                name: "monitor_clients",
                help: "Distinct clients seen by a monitor handler, by operation (clients beyond the cap count once)",
                kind: ObservationKind::Gauge,
                labels: op(),
                value: distinct,
            });
            let per_client = stats
                .clients
                .iter()
                .map(|(c, n)| (c.map_or_else(|| OTHER.to_owned(), |ip| ip.to_string()), *n))
                .chain((stats.other_clients > 0).then(|| (OTHER.to_owned(), stats.other_clients)));
            for (client, n) in per_client {
                out.push(Observation {
                    name: "monitor_client_messages",
                    help: "Messages per client seen by a monitor handler, by operation",
                    kind: ObservationKind::Counter,
                    labels: vec![("operation", operation.clone()), ("client", client)],
                    value: n,
                });
            }
        }
        out
    }
}

/// The `monitor` kind.
#[derive(Debug, Clone, Copy, Default)]
pub struct MonitorKind;

/// `[handlers.NAME]` settings of kind `monitor`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MonitorSettings {
    /// Clients tracked one by one per operation (default 1000).
    #[serde(default = "default_max_clients")]
    pub max_clients: u64,
}

fn default_max_clients() -> u64 {
    1000
}

impl HandlerKind for MonitorKind {
    type Settings = MonitorSettings;

    fn name(&self) -> &'static str {
        "monitor"
    }

    fn build(
        &self,
        settings: MonitorSettings,
        _env: &BuildEnv<'_>,
    ) -> Result<Arc<dyn Handler>, SettingsError> {
        let max = usize::try_from(settings.max_clients).unwrap_or(usize::MAX);
        Ok(Arc::new(Monitor::new(max)))
    }
}
