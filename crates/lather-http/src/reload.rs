//! Configuration reload: a new configuration's services, handlers and upstreams replace
//! the running ones without closing a connection. Requests begun before the reload finish
//! with the services they started on; the next request on every connection gets the new
//! ones. Services that keep state (subscriptions, contexts, registrations, offers, pending
//! replies, message streams) are carried over as they are and must not change; nor may
//! `[nats]`, `[stream]` and `[qos]`. A refused reload leaves the server as it was.

use crate::ServeError;
use crate::current::CurrentState;
use crate::service::Service;
use crate::state::State;
use lather_compose::Composer;
use lather_config::{Builtin, Config, ServerConfig, ServiceConfig, ServiceKind};
use std::net::SocketAddr;
use std::sync::Arc;

/// Why a reload was refused (the server goes on with the configuration it had).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReloadError {
    /// The change needs a restart: the message names what changed.
    #[error("{0} changed, which only a restart applies; nothing was reloaded")]
    NeedsRestart(String),
    /// The new configuration's services or handlers could not be made.
    #[error(transparent)]
    Serve(#[from] ServeError),
}

/// What a reload did.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Reloaded {
    /// Services served now.
    pub services: usize,
    /// Services carried over unchanged because they keep state.
    pub carried: Vec<String>,
    /// `[server]` keys that changed but apply only at the next start.
    pub start_only: Vec<&'static str>,
}

/// What a reload needs besides the new configuration.
#[derive(Debug)]
pub(crate) struct ReloadParts {
    /// The handler kinds the server was built with.
    pub(crate) composer: Composer,
    /// Services mounted in code, served beside every configuration's.
    pub(crate) mounted: Vec<Arc<Service>>,
    /// The configuration served now.
    pub(crate) config: Config,
    /// The address bound.
    pub(crate) listen: SocketAddr,
}

/// Reloads a running server's configuration (from [`Server::reloader`](crate::Server::reloader)).
/// Clones share the server; reloads run one at a time.
#[derive(Debug, Clone)]
pub struct Reloader {
    current: Arc<CurrentState>,
    parts: Arc<tokio::sync::Mutex<ReloadParts>>,
}

impl Reloader {
    pub(crate) fn new(current: Arc<CurrentState>, parts: ReloadParts) -> Self {
        Reloader {
            current,
            parts: Arc::new(tokio::sync::Mutex::new(parts)),
        }
    }

    /// Serves `config` from the next request on, or says why not (and changes nothing).
    /// `config` has been validated already (it is a [`Config`]).
    pub async fn reload(&self, config: &Config) -> Result<Reloaded, ReloadError> {
        let mut parts = self.parts.lock().await;
        let old = self.current.load();
        let before = tables(parts.config.text());
        let after = tables(config.text());
        for key in ["nats", "stream", "qos", "telemetry"] {
            if before.get(key) != after.get(key) {
                return Err(ReloadError::NeedsRestart(format!("[{key}]")));
            }
        }
        let carried = carried(&old, &parts.config, config, &before, &after)?;
        let (mut services, link) =
            crate::configured::configured(&parts.composer, config, parts.listen, &carried)?;
        services.extend(parts.mounted.iter().cloned());
        let count = services.len();
        let policy =
            lather_qos::QosPolicy::new(config.qos.as_ref(), old.compression.policy.gauge().clone());
        let mut state = State::assemble(
            &config.server,
            services,
            parts.listen,
            link,
            old.cpu_pool.clone(),
            policy,
            Some(&old.metrics),
        )?;
        state.streams = old.streams.clone();
        state.offer_broker = old.offer_broker.clone();
        crate::configured::register_collectors(&mut state);
        if let Some(link) = &state.link {
            link.connect()
                .await
                .map_err(|e| ServeError::NatsUnreachable(e.to_string()))?;
        }
        let mut start_only = start_only_changes(&parts.config.server, &config.server);
        let tls = |t: &toml::Table| t.get("server").and_then(|s| s.get("tls")).cloned();
        if tls(&before) != tls(&after) {
            // The certificate files themselves are re-read when they change.
            start_only.push("tls");
        }
        self.current.replace(Arc::new(state));
        parts.config = config.clone();
        Ok(Reloaded {
            services: count,
            carried: carried.iter().map(|s| s.name.clone()).collect(),
            start_only,
        })
    }
}

/// The top-level tables of a configuration's text (empty when it was not read from text).
fn tables(text: &str) -> toml::Table {
    text.parse().unwrap_or_default()
}

/// The `[[service]]` table named `name`.
fn service_table<'a>(tables: &'a toml::Table, name: &str) -> Option<&'a toml::Value> {
    tables.get("service")?.as_array()?.iter().find(|t| {
        t.get("name")
            .and_then(toml::Value::as_str)
            .is_some_and(|n| n == name)
    })
}

/// Whether a service keeps state a rebuild would lose or could not reopen.
fn keeps_state(svc: &ServiceConfig) -> bool {
    matches!(
        svc.kind(),
        ServiceKind::Builtin(
            Builtin::EventSource | Builtin::ContextStore | Builtin::Registry | Builtin::QosBroker
        )
    ) || svc.async_replies.as_ref().is_some_and(|v| *v.get_ref())
        || svc.accept_streams.as_ref().is_some_and(|v| *v.get_ref())
        || !svc.offers.is_empty()
}

/// The running services that keep state, each of which the new configuration must have
/// unchanged; a new configuration may add no such service either.
fn carried(
    old: &State,
    before: &Config,
    after: &Config,
    before_tables: &toml::Table,
    after_tables: &toml::Table,
) -> Result<Vec<Arc<Service>>, ReloadError> {
    let running = old.unique_services();
    let mut carried = Vec::new();
    for svc in before.services.iter().filter(|s| keeps_state(s)) {
        let name = svc.name.get_ref();
        let same = service_table(before_tables, name) == service_table(after_tables, name)
            && service_table(after_tables, name).is_some();
        if !same {
            return Err(ReloadError::NeedsRestart(format!(
                "service {name:?}, which keeps state (subscriptions, contexts, registrations, offers, pending replies or streams),"
            )));
        }
        if let Some(service) = running.iter().find(|s| s.name == *name) {
            carried.push(service.clone());
        }
    }
    if let Some(new) = after
        .services
        .iter()
        .filter(|s| keeps_state(s))
        .find(|s| !carried.iter().any(|c| c.name == *s.name.get_ref()))
    {
        return Err(ReloadError::NeedsRestart(format!(
            "a new service {:?} that keeps state",
            new.name.get_ref()
        )));
    }
    Ok(carried)
}

/// The `[server]` keys read at start only whose values differ.
fn start_only_changes(before: &ServerConfig, after: &ServerConfig) -> Vec<&'static str> {
    // Each key named once: its field has the key's name.
    macro_rules! differing {
        ($($key:ident),* $(,)?) => {
            [$((stringify!($key), before.$key != after.$key)),*]
        };
    }
    differing!(
        listen,
        workers,
        threading,
        pin_io_threads,
        roam_connections,
        roam_spare_idle_percent,
        roam_saturated_idle_percent,
        cpu_threads,
        cpu_inline_micros,
        max_connections,
        max_connections_per_client,
        idle_timeout_ms,
        header_timeout_ms,
        shutdown_grace_ms,
    )
    .into_iter()
    .filter_map(|(key, differs)| differs.then_some(key))
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_read_at_start_are_named_when_they_change() {
        let before = ServerConfig::default();
        assert!(start_only_changes(&before, &before.clone()).is_empty());
        let mut after = before.clone();
        after.workers = 3;
        after.pin_io_threads = false;
        after.roam_saturated_idle_percent = 10;
        assert_eq!(
            start_only_changes(&before, &after),
            vec!["workers", "pin_io_threads", "roam_saturated_idle_percent"]
        );
    }
}
