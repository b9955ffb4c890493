//! Building configured handlers: kind lookup, parameter checks, engine options.

use crate::{
    Algorithm, AuditFile, Compress, CpuBurn, Decompress, Decrypt, Digest, Encrypt,
    EncryptionAlgorithm, EncryptionKey, EventSinks, FormatConvert, Fsync, Logging, Monitor, Notify,
    Publish, Sleep, WsAddressing, WsrfResource, WsseSettings, WsseUsername,
};
use lather_config::{
    Builtin, Config, ConfigError, Fallback, HandlerConfig, Placement, ServiceKind,
};
use lather_pipeline::{Handler, Options, Step, Work};
use lather_remote::{AutoPlaced, Link, OnewayRemoteHandler, RemoteHandler};
use std::sync::Arc;
use std::time::Duration;

/// Every handler kind, with the parameters it takes (required first) and its kind of work.
pub const KINDS: &[(&str, &[&str], Work)] = &[
    ("logging", &[], Work::Io),
    ("monitor", &["max_clients"], Work::Io),
    ("cpu-burn", &["micros"], Work::Cpu),
    ("sleep", &["millis"], Work::Io),
    ("digest", &["rounds"], Work::Cpu),
    ("compress", &["algorithm", "min_bytes"], Work::Cpu),
    ("decompress", &["max_bytes"], Work::Cpu),
    ("encrypt", &["key_file", "algorithm", "header"], Work::Cpu),
    (
        "decrypt",
        &["key_file", "required", "header", "forward_security"],
        Work::Cpu,
    ),
    ("audit-file", &["path", "fsync"], Work::Io),
    (
        "wsse-username",
        &[
            "users_file",
            "window_s",
            "max_nonce_bytes",
            "max_nonces",
            "require_nonce",
            "forward_security",
        ],
        Work::Io,
    ),
    ("wsrf-resource", &["path", "max_resources"], Work::Io),
    ("notify", &["sink"], Work::Io),
    ("wsa", &["required", "response_action"], Work::Io),
    ("format-convert", &["mapping_file", "reverse"], Work::Cpu),
    ("publish", &["source", "action", "topic"], Work::Io),
];

/// Kinds that change state outside the message, so a second attempt could apply a change
/// twice: they are never retried.
const STATEFUL: &[&str] = &["wsrf-resource"];

/// Kinds whose second run for one message is not harmless — they write, send or change
/// something outside the message (an audit line, a notification, an event, a resource)
/// — beside the stateful ones: a remote call of theirs whose worker was lost is not sent
/// again (it may have run), and one cut off by a NATS outage is not run locally.
pub const NOT_IDEMPOTENT: &[&str] = &["audit-file", "notify", "publish", "wsrf-resource"];

/// Whether running a handler of `kind` twice for one message does no harm.
pub fn is_idempotent(kind: &str) -> bool {
    !NOT_IDEMPOTENT.contains(&kind) && !STATEFUL.contains(&kind)
}

/// Resources a `wsrf-resource` store holds unless `max_resources` says otherwise.
const DEFAULT_MAX_RESOURCES: u64 = 100_000;

/// Makes the `[handlers.NAME]` table `cfg` into a step that runs the handler in process
/// (whatever its `placement`; see [`build_placed_step`]). Errors name the file, line and
/// key: an unknown kind, a parameter the kind does not take, a missing parameter, a oneway
/// handler asked for retries.
pub fn build_step(name: &str, cfg: &HandlerConfig, config: &Config) -> Result<Step, ConfigError> {
    let (handler, options) = build_handler(name, cfg, config)?;
    Ok(Step::new(name, handler, options))
}

/// Makes `cfg` into a step placed as configured: a `placement = "remote"` handler is
/// wrapped in a [`RemoteHandler`] (a oneway one in an [`OnewayRemoteHandler`], which hands
/// messages to a JetStream work queue) that reaches its workers through `link` (the process's
/// link to `[nats]`; the configuration check guarantees one exists for remote handlers);
/// a `placement = "auto"` one in an [`AutoPlaced`] that runs each call locally or there.
/// A `publish` handler hands its events to the source of that name in `sinks`.
pub fn build_placed_step(
    name: &str,
    cfg: &HandlerConfig,
    config: &Config,
    link: Option<&Arc<Link>>,
    sinks: &EventSinks,
) -> Result<Step, ConfigError> {
    let (handler, mut options) = build_handler_with(name, cfg, config, sinks)?;
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
                .idempotent(is_idempotent(cfg.kind.get_ref()))
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
            .idempotent(is_idempotent(cfg.kind.get_ref()))
            .adaptive_timeout(cfg.timeout_ms.is_none());
            Arc::new(AutoPlaced::new(handler, work, remote))
        }
        _ => handler,
    };
    Ok(Step::new(name, handler, options))
}

/// Largest `max_nonce_bytes` accepted: a nonce is a random value, 16 bytes in practice.
const MAX_NONCE_BYTES: u64 = 1024;

/// The `wsse-username` settings of `cfg`, defaults filled in; a `max_nonce_bytes` or
/// `max_nonces` of 0, or a `max_nonce_bytes` beyond [`MAX_NONCE_BYTES`], is an error naming
/// the key.
fn wsse_settings(
    name: &str,
    cfg: &HandlerConfig,
    config: &Config,
) -> Result<WsseSettings, ConfigError> {
    let defaults = WsseSettings::default();
    let positive = |key: &str, value: Option<&toml::Spanned<u64>>, max: u64| match value {
        None => Ok(None),
        Some(v) if (1..=max).contains(v.get_ref()) => {
            Ok(Some(usize::try_from(*v.get_ref()).unwrap_or(usize::MAX)))
        }
        Some(v) => Err(config.error_at(
            v.span(),
            format!("handlers.{name}.{key}: must be between 1 and {max}"),
        )),
    };
    let max_nonce_bytes = positive(
        "max_nonce_bytes",
        cfg.max_nonce_bytes.as_ref(),
        MAX_NONCE_BYTES,
    )?;
    let max_nonces = positive("max_nonces", cfg.max_nonces.as_ref(), u64::MAX)?;
    let flag = |f: &Option<toml::Spanned<bool>>| f.as_ref().map(|f| *f.get_ref());
    Ok(WsseSettings {
        window_s: cfg
            .window_s
            .as_ref()
            .map_or(defaults.window_s, |w| *w.get_ref()),
        max_nonce_bytes: max_nonce_bytes.unwrap_or(defaults.max_nonce_bytes),
        max_nonces: max_nonces.unwrap_or(defaults.max_nonces),
        require_nonce: flag(&cfg.require_nonce).unwrap_or(defaults.require_nonce),
        forward_security: flag(&cfg.forward_security).unwrap_or(defaults.forward_security),
    })
}

/// The message limits of `[server]`.
pub fn limits(config: &Config) -> lather_envelope::Limits {
    lather_envelope::Limits {
        max_message_bytes: config.server.max_message_bytes,
        max_depth: config.server.max_depth,
        max_attributes: config.server.max_attributes,
    }
}

/// Makes `cfg` into the local handler and its engine options (for a step, or for a worker
/// that hosts it). No event source runs here: a `publish` handler built so faults with
/// `EventSourceNotRunning` (see [`build_handler_with`]).
pub fn build_handler(
    name: &str,
    cfg: &HandlerConfig,
    config: &Config,
) -> Result<(Arc<dyn Handler>, Options), ConfigError> {
    build_handler_with(name, cfg, config, &EventSinks::default())
}

/// [`build_handler`] in a process whose event sources are (or will be) registered in
/// `sinks`, where `publish` handlers find them.
pub fn build_handler_with(
    name: &str,
    cfg: &HandlerConfig,
    config: &Config,
    sinks: &EventSinks,
) -> Result<(Arc<dyn Handler>, Options), ConfigError> {
    let kind = cfg.kind.get_ref().as_str();
    let Some((_, params, work)) = KINDS.iter().find(|(k, _, _)| *k == kind) else {
        let known: Vec<&str> = KINDS.iter().map(|(k, _, _)| *k).collect();
        return Err(config.error_at(
            cfg.kind.span(),
            format!(
                "handlers.{name}.kind: unknown kind {kind:?}; known kinds: {}",
                known.join(", ")
            ),
        ));
    };
    for (key, span) in cfg.parameters() {
        if !params.contains(&key) {
            return Err(config.error_at(
                span,
                format!("handlers.{name}.{key}: kind {kind:?} does not take {key}"),
            ));
        }
    }
    let missing = |key: &str| {
        config.error_at(
            cfg.kind.span(),
            format!("handlers.{name}: kind {kind:?} needs {key} = …"),
        )
    };
    let defaults = Options::default();
    let timeout = cfg
        .timeout_ms
        .as_ref()
        .map_or(defaults.timeout, |t| Duration::from_millis(*t.get_ref()));
    let handler: Arc<dyn Handler> = match kind {
        "logging" => Arc::new(Logging),
        "monitor" => {
            let max = cfg.max_clients.as_ref().map_or(1000, |m| *m.get_ref());
            Arc::new(Monitor::new(usize::try_from(max).unwrap_or(usize::MAX)))
        }
        "cpu-burn" => Arc::new(CpuBurn::new(
            *cfg.micros
                .as_ref()
                .ok_or_else(|| missing("micros"))?
                .get_ref(),
        )),
        "sleep" => Arc::new(Sleep::new(
            *cfg.millis
                .as_ref()
                .ok_or_else(|| missing("millis"))?
                .get_ref(),
        )),
        "digest" => Arc::new(Digest::new(
            *cfg.rounds
                .as_ref()
                .ok_or_else(|| missing("rounds"))?
                .get_ref(),
        )),
        "compress" => {
            let algorithm = match &cfg.algorithm {
                None => Algorithm::Gzip,
                Some(a) => Algorithm::parse(a.get_ref()).ok_or_else(|| {
                    config.error_at(
                        a.span(),
                        format!(
                            "handlers.{name}.algorithm: {:?} is not gzip or deflate",
                            a.get_ref()
                        ),
                    )
                })?,
            };
            let min = cfg.min_bytes.as_ref().map_or(1024, |m| *m.get_ref());
            Arc::new(Compress::new(
                algorithm,
                usize::try_from(min).unwrap_or(usize::MAX),
            ))
        }
        "decompress" => {
            let max = cfg
                .max_bytes
                .as_ref()
                .map_or(4 * 1024 * 1024, |m| *m.get_ref());
            Arc::new(Decompress::new(usize::try_from(max).unwrap_or(usize::MAX)))
        }
        "encrypt" => {
            let file = cfg.key_file.as_ref().ok_or_else(|| missing("key_file"))?;
            let key = load_key(name, file, config)?;
            let algorithm = match &cfg.algorithm {
                None => EncryptionAlgorithm::Aes256Gcm,
                Some(a) => EncryptionAlgorithm::from_name(a.get_ref()).ok_or_else(|| {
                    let known: Vec<&str> =
                        EncryptionAlgorithm::ALL.iter().map(|a| a.name()).collect();
                    config.error_at(
                        a.span(),
                        format!(
                            "handlers.{name}.algorithm: {:?} is not one of {}",
                            a.get_ref(),
                            known.join(", ")
                        ),
                    )
                })?,
            };
            let encrypt = Encrypt::new(key, algorithm).map_err(|e| {
                config.error_at(
                    file.span(),
                    format!("handlers.{name}.key_file: {}: {e}", file.get_ref()),
                )
            })?;
            Arc::new(match header_name(name, cfg, config)? {
                Some(q) => encrypt.header(q),
                None => encrypt,
            })
        }
        "decrypt" => {
            let file = cfg.key_file.as_ref().ok_or_else(|| missing("key_file"))?;
            let required = cfg.required.as_ref().is_some_and(|r| *r.get_ref());
            let forward = cfg.forward_security.as_ref().is_some_and(|f| *f.get_ref());
            let decrypt =
                Decrypt::new(load_key(name, file, config)?, required).forward_security(forward);
            Arc::new(match header_name(name, cfg, config)? {
                Some(q) => decrypt.header(q),
                None => decrypt,
            })
        }
        "audit-file" => {
            let path = cfg.path.as_ref().ok_or_else(|| missing("path"))?;
            let fsync = match &cfg.fsync {
                None => Fsync::Always,
                Some(f) => Fsync::parse(f.get_ref()).ok_or_else(|| {
                    config.error_at(f.span(), format!("handlers.{name}.fsync: {:?} is not \"always\", \"never\" or an interval like \"100ms\"", f.get_ref()))
                })?,
            };
            let file =
                AuditFile::open(std::path::Path::new(path.get_ref()), fsync).map_err(|e| {
                    config.error_at(
                        path.span(),
                        format!(
                            "handlers.{name}.path: cannot open {:?}: {e}",
                            path.get_ref()
                        ),
                    )
                })?;
            Arc::new(file)
        }
        "wsse-username" => {
            let file = cfg
                .users_file
                .as_ref()
                .ok_or_else(|| missing("users_file"))?;
            let text = std::fs::read_to_string(file.get_ref()).map_err(|e| {
                config.error_at(
                    file.span(),
                    format!(
                        "handlers.{name}.users_file: cannot read {:?}: {e}",
                        file.get_ref()
                    ),
                )
            })?;
            let users = WsseUsername::parse_users(&text).map_err(|e| {
                config.error_at(
                    file.span(),
                    format!("handlers.{name}.users_file: {}: {e}", file.get_ref()),
                )
            })?;
            Arc::new(WsseUsername::with_settings(
                users,
                wsse_settings(name, cfg, config)?,
            ))
        }
        "wsrf-resource" => {
            let path = cfg.path.as_ref().ok_or_else(|| missing("path"))?;
            let max = cfg
                .max_resources
                .as_ref()
                .map_or(DEFAULT_MAX_RESOURCES, |m| *m.get_ref());
            let store =
                WsrfResource::open(std::path::Path::new(path.get_ref()), max).map_err(|e| {
                    config.error_at(
                        path.span(),
                        format!(
                            "handlers.{name}.path: cannot open the resource store {:?}: {e}",
                            path.get_ref()
                        ),
                    )
                })?;
            Arc::new(store)
        }
        "notify" => {
            let sink = cfg.sink.as_ref().ok_or_else(|| missing("sink"))?;
            let notify = Notify::new(sink.get_ref(), timeout).map_err(|why| {
                config.error_at(
                    sink.span(),
                    format!("handlers.{name}.sink: {:?} {why}", sink.get_ref()),
                )
            })?;
            Arc::new(notify)
        }
        "wsa" => Arc::new(WsAddressing::new(
            cfg.required.as_ref().is_some_and(|r| *r.get_ref()),
            cfg.response_action.as_ref().map(|a| a.get_ref().clone()),
        )),
        "format-convert" => {
            let file = cfg
                .mapping_file
                .as_ref()
                .ok_or_else(|| missing("mapping_file"))?;
            let text = std::fs::read_to_string(file.get_ref()).map_err(|e| {
                config.error_at(
                    file.span(),
                    format!(
                        "handlers.{name}.mapping_file: cannot read {:?}: {e}",
                        file.get_ref()
                    ),
                )
            })?;
            let reverse = cfg.reverse.as_ref().is_some_and(|r| *r.get_ref());
            let convert = FormatConvert::from_rules(&text, reverse).map_err(|e| {
                config.error_at(
                    file.span(),
                    format!(
                        "handlers.{name}.mapping_file: {}:{}: {}",
                        file.get_ref(),
                        e.line,
                        e.message
                    ),
                )
            })?;
            Arc::new(convert)
        }
        "publish" => {
            let source = cfg.source.as_ref().ok_or_else(|| missing("source"))?;
            check_publish(name, cfg, source, config)?;
            Arc::new(Publish::new(
                source.get_ref(),
                sinks.clone(),
                cfg.action.as_ref().map(|a| a.get_ref().clone()),
                cfg.topic.as_ref().map(|t| t.get_ref().as_str()),
            ))
        }
        _ => unreachable!("every entry of KINDS is built above"),
    };
    let work = match &cfg.work {
        None => *work,
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
        stateless: !STATEFUL.contains(&kind),
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
            format!("handlers.{name}.retries: kind {kind:?} changes a store, so it is not retried"),
        ));
    }
    Ok((handler, options))
}

/// A `publish` handler's checks: `source` names a `builtin = "event-source"` service of
/// this configuration, `action` and `topic` are not blank, and the handler runs in the
/// serving process (a `lather worker` has no event sources).
fn check_publish(
    name: &str,
    cfg: &HandlerConfig,
    source: &toml::Spanned<String>,
    config: &Config,
) -> Result<(), ConfigError> {
    let is_source = |svc: &&lather_config::ServiceConfig| {
        matches!(svc.kind(), ServiceKind::Builtin(Builtin::EventSource))
    };
    let wanted = source.get_ref();
    match config.services.iter().find(|s| s.name.get_ref() == wanted) {
        Some(svc) if is_source(&svc) => {}
        found => {
            let sources: Vec<&str> = config
                .services
                .iter()
                .filter(is_source)
                .map(|s| s.name.get_ref().as_str())
                .collect();
            let what = if found.is_some() {
                "is not a builtin = \"event-source\" service"
            } else {
                "names no service"
            };
            let known = if sources.is_empty() {
                "this configuration has no event source".to_owned()
            } else {
                format!("event sources: {}", sources.join(", "))
            };
            return Err(config.error_at(
                source.span(),
                format!("handlers.{name}.source: {wanted:?} {what} ({known})"),
            ));
        }
    }
    for (key, value) in [("action", &cfg.action), ("topic", &cfg.topic)] {
        if let Some(v) = value
            && v.get_ref().trim().is_empty()
        {
            return Err(config.error_at(
                v.span(),
                format!("handlers.{name}.{key}: must not be empty"),
            ));
        }
    }
    if let Some(p) = &cfg.placement
        && *p.get_ref() != Placement::Local
    {
        return Err(config.error_at(
            p.span(),
            format!(
                "handlers.{name}.placement: kind \"publish\" hands events to an event source of the serving process, so it runs there only (a worker has no event sources)"
            ),
        ));
    }
    Ok(())
}

/// The `header` parameter as a name, if given; Clark notation with a namespace.
fn header_name(
    name: &str,
    cfg: &HandlerConfig,
    config: &Config,
) -> Result<Option<lather_envelope::QName>, ConfigError> {
    let Some(header) = &cfg.header else {
        return Ok(None);
    };
    match lather_config::parse_clark(header.get_ref()) {
        Some((ns, local)) if !ns.is_empty() => Ok(Some(lather_envelope::QName::new(ns, local))),
        _ => Err(config.error_at(
            header.span(),
            format!(
                "handlers.{name}.header: {:?} is not a header name like \"{{urn:ns}}Local\"",
                header.get_ref()
            ),
        )),
    }
}

/// The key in `file` (raw bytes or a hex line); errors name the `key_file` line.
fn load_key(
    name: &str,
    file: &toml::Spanned<String>,
    config: &Config,
) -> Result<EncryptionKey, ConfigError> {
    let error = |why: String| {
        config.error_at(
            file.span(),
            format!("handlers.{name}.key_file: {}: {why}", file.get_ref()),
        )
    };
    let contents = std::fs::read(file.get_ref()).map_err(|e| error(format!("cannot read: {e}")))?;
    EncryptionKey::from_file_contents(&contents).map_err(error)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_that_write_send_or_keep_state_are_not_idempotent() {
        for kind in ["audit-file", "notify", "publish", "wsrf-resource"] {
            assert!(!is_idempotent(kind), "{kind}");
        }
        for (kind, _, _) in KINDS {
            assert_eq!(
                is_idempotent(kind),
                !NOT_IDEMPOTENT.contains(kind),
                "{kind}"
            );
        }
        assert!(is_idempotent("sleep") && is_idempotent("wsse-username"));
    }
}
