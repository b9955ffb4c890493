//! One configured handler: its kind, its settings, the engine's options, and where it runs.

use crate::settings::{self, HandlerTables};
use lather_config::{
    Builtin, Config, ConfigError, Fallback, HandlerConfig, Placement, ServiceKind,
};
use lather_pipeline::{BuildEnv, Handler, KindRegistry, Options, Resources, Step, Work};
use lather_remote::{AutoPlaced, Link, OnewayRemoteHandler, RemoteHandler};
use std::sync::Arc;
use std::time::Duration;

/// What building one handler needs besides its table.
pub(crate) struct Ingredients<'a> {
    pub(crate) kinds: &'a KindRegistry,
    pub(crate) config: &'a Config,
    pub(crate) tables: &'a HandlerTables<'a>,
    pub(crate) services: &'a [(String, String)],
    pub(crate) resources: &'a Resources,
}

/// The services of `config` that are of a built-in kind, as `(name, builtin)`.
pub(crate) fn builtin_services(config: &Config) -> Vec<(String, String)> {
    config
        .services
        .iter()
        .filter_map(|svc| match svc.kind() {
            ServiceKind::Builtin(b) => Some((svc.name.get_ref().clone(), builtin_name(*b).into())),
            ServiceKind::Gateway(_) | ServiceKind::RegistryGateway(_) => None,
        })
        .collect()
}

/// The name a configuration gives a built-in service (`builtin = "…"`).
fn builtin_name(builtin: Builtin) -> &'static str {
    match builtin {
        Builtin::Echo => "echo",
        Builtin::EventSource => "event-source",
        Builtin::ContextStore => "context-store",
        Builtin::Registry => "registry",
        Builtin::QosBroker => "qos-broker",
    }
}

/// The message limits of `[server]` (of `config`).
pub fn limits(config: &Config) -> lather_envelope::Limits {
    server_limits(&config.server)
}

/// The message limits of the `[server]` settings `server`.
pub fn server_limits(server: &lather_config::ServerConfig) -> lather_envelope::Limits {
    lather_envelope::Limits {
        max_message_bytes: server.max_message_bytes,
        max_depth: server.max_depth,
        max_attributes: server.max_attributes,
    }
}

/// Makes `cfg` into the local handler and its engine options. Errors name the file, line and
/// key: an unknown kind, a setting the kind does not take or refuses, a missing one, a
/// oneway handler asked for retries.
pub(crate) fn build_handler(
    with: &Ingredients<'_>,
    name: &str,
    cfg: &HandlerConfig,
) -> Result<(Arc<dyn Handler>, Options), ConfigError> {
    let config = with.config;
    let kind_name = cfg.kind.get_ref().as_str();
    let Some(kind) = with.kinds.get(kind_name) else {
        let known: Vec<&str> = with.kinds.names().collect();
        return Err(config.error_at(
            cfg.kind.span(),
            format!(
                "handlers.{name}.kind: unknown kind {kind_name:?}; known kinds: {}",
                known.join(", ")
            ),
        ));
    };
    let defaults = Options::default();
    let timeout = cfg
        .timeout_ms
        .as_ref()
        .map_or(defaults.timeout, |t| Duration::from_millis(*t.get_ref()));
    let env = BuildEnv {
        handler: name,
        timeout,
        services: with.services,
        resources: with.resources,
    };
    let handler = settings::build(with.tables, config, name, cfg, kind, &env)?;
    if let Some(p) = &cfg.placement
        && *p.get_ref() != Placement::Local
        && !kind.remote_capable()
    {
        return Err(config.error_at(
            p.span(),
            format!(
                "handlers.{name}.placement: kind {kind_name:?} uses what only the serving process has, so it runs there only (a worker has no event sources or other resources of the serving process)"
            ),
        ));
    }
    let work = match &cfg.work {
        None => kind.work(),
        Some(w) => match w.get_ref().as_str() {
            "cpu" => Work::Cpu,
            "io" => Work::Io,
            other => {
                return Err(config.error_at(
                    w.span(),
                    format!("handlers.{name}.work: {other:?} is not \"cpu\" or \"io\""),
                ));
            }
        },
    };
    let options = Options {
        must_perform: cfg.must_perform.unwrap_or(defaults.must_perform),
        oneway: cfg.oneway.unwrap_or(defaults.oneway),
        retries: cfg
            .retries
            .as_ref()
            .map_or(defaults.retries, |r| *r.get_ref()),
        retry_backoff: cfg
            .retry_backoff_ms
            .map_or(defaults.retry_backoff, Duration::from_millis),
        timeout,
        stateless: !kind.stateful(),
        work,
        snapshot: cfg.snapshot.unwrap_or(defaults.snapshot),
    };
    if let Some(t) = &cfg.timeout_ms
        && *t.get_ref() == 0
    {
        return Err(config.error_at(
            t.span(),
            format!("handlers.{name}.timeout_ms: must be greater than 0"),
        ));
    }
    if let Some(r) = &cfg.retries
        && options.oneway
        && *r.get_ref() > 0
    {
        return Err(config.error_at(
            r.span(),
            format!("handlers.{name}.retries: a oneway handler is not retried"),
        ));
    }
    if let Some(r) = &cfg.retries
        && !options.stateless
        && *r.get_ref() > 0
    {
        return Err(config.error_at(
            r.span(),
            format!(
                "handlers.{name}.retries: kind {kind_name:?} changes a store, so it is not retried"
            ),
        ));
    }
    Ok((handler, options))
}

/// Makes `cfg` into a step placed as configured: a `placement = "remote"` handler is
/// wrapped in a [`RemoteHandler`] (a oneway one in an [`OnewayRemoteHandler`], which hands
/// messages to a JetStream work queue) that reaches its workers through `link` (the
/// process's link to `[nats]`; the configuration check guarantees one exists for remote
/// handlers); a `placement = "auto"` one in an [`AutoPlaced`] that runs each call locally or
/// there. Idempotency comes from the handler's kind.
pub(crate) fn build_placed_step(
    with: &Ingredients<'_>,
    name: &str,
    cfg: &HandlerConfig,
    link: Option<&Arc<Link>>,
) -> Result<Step, ConfigError> {
    let (handler, mut options) = build_handler(with, name, cfg)?;
    let idempotent = with
        .kinds
        .get(cfg.kind.get_ref())
        .is_some_and(|k| k.idempotent());
    let config = with.config;
    let handler: Arc<dyn Handler> = match (cfg.placement(), link) {
        (Placement::Remote, Some(link)) if options.oneway => {
            // Handing over waits on the network (a local fallback runs on the I/O threads too).
            options.work = Work::Io;
            Arc::new(OnewayRemoteHandler::new(
                name,
                handler,
                link.clone(),
                cfg.fallback(),
                options.timeout,
            ))
        }
        (Placement::Remote, Some(link)) => {
            // Here the call waits on the network: it belongs on the I/O threads, not the
            // CPU pool (a local fallback then runs there too).
            options.work = Work::Io;
            Arc::new(
                RemoteHandler::new(
                    name,
                    handler,
                    link.clone(),
                    cfg.fallback(),
                    options.timeout,
                    limits(config),
                )
                .idempotent(idempotent)
                .adaptive_timeout(cfg.timeout_ms.is_none()),
            )
        }
        (Placement::Auto, Some(link)) => {
            // The wrapper waits on the network or on the CPU pool itself (local calls of a
            // CPU-bound handler go to the pool inside it, timed as the message sees them).
            let work = std::mem::replace(&mut options.work, Work::Io);
            let remote = RemoteHandler::new(
                name,
                handler.clone(),
                link.clone(),
                Fallback::Local,
                options.timeout,
                limits(config),
            )
            .idempotent(idempotent)
            .adaptive_timeout(cfg.timeout_ms.is_none());
            Arc::new(AutoPlaced::new(handler, work, remote))
        }
        _ => handler,
    };
    Ok(Step::new(name, handler, options))
}
