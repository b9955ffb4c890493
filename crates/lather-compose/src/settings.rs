//! A handler's settings table, read again from the configuration's text so that the kind's
//! deserializer sees spans, and the kind's refusals made into configuration errors that
//! name the file, the line and the key.

use lather_config::{Config, ConfigError, ENGINE_KEYS, HandlerConfig};
use lather_pipeline::{BuildEnv, DynKind, Handler, KindError};
use std::ops::Range;
use std::sync::Arc;
use toml::Spanned;
use toml::de::{DeTable, DeValue, Deserializer};

/// The `[handlers]` tables of one configuration text, parsed once for every handler.
pub(crate) struct HandlerTables<'t> {
    handlers: Option<DeTable<'t>>,
}

impl<'t> HandlerTables<'t> {
    /// The `[handlers]` tables of `config`'s text (none when it was not read from text).
    pub(crate) fn of(config: &'t Config) -> Self {
        let handlers = DeTable::parse(config.text()).ok().and_then(|root| {
            let root = root.into_inner();
            let (_, value) = root.into_iter().find(|(k, _)| k.get_ref() == "handlers")?;
            match value.into_inner() {
                DeValue::Table(table) => Some(table),
                _ => None,
            }
        });
        HandlerTables { handlers }
    }

    /// `[handlers.NAME]` less the engine's keys, with its span.
    fn settings(&self, name: &str) -> Option<Spanned<DeTable<'t>>> {
        let (_, value) = self
            .handlers
            .as_ref()?
            .iter()
            .find(|(k, _)| k.get_ref() == name)?;
        let span = value.span();
        let DeValue::Table(table) = value.get_ref() else {
            return None;
        };
        let table: DeTable<'t> = table
            .iter()
            .filter(|(k, _)| !ENGINE_KEYS.contains(&k.get_ref().as_ref()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        Some(Spanned::new(span, table))
    }
}

/// Makes handler `name` of `kind` from its settings; errors name the file, line and key.
pub(crate) fn build(
    tables: &HandlerTables<'_>,
    config: &Config,
    name: &str,
    cfg: &HandlerConfig,
    kind: &dyn DynKind,
    env: &BuildEnv<'_>,
) -> Result<Arc<dyn Handler>, ConfigError> {
    let built = match tables.settings(name) {
        Some(table) => kind
            .build_from(Deserializer::from(table), env)
            .map_err(|e| (e, true)),
        None => {
            // A configuration not read from text: its settings values, without places.
            let text = fallback_text(cfg);
            match DeTable::parse(&text) {
                Ok(table) => kind
                    .build_from(Deserializer::from(table), env)
                    .map_err(|e| (e, false)),
                Err(e) => Err((
                    KindError::Shape {
                        message: e.message().to_owned(),
                        span: None,
                    },
                    false,
                )),
            }
        }
    };
    built.map_err(|(e, spans_in_text)| to_config_error(config, name, cfg, e, spans_in_text))
}

/// The settings of `cfg` as TOML text.
fn fallback_text(cfg: &HandlerConfig) -> String {
    let table: toml::Table = cfg
        .settings
        .iter()
        .map(|(k, v)| (k.clone(), v.get_ref().clone()))
        .collect();
    toml::to_string(&table).unwrap_or_default()
}

/// The configuration error for a kind's refusal, with today's wording: an unknown key is
/// "does not take", a missing one "needs KEY = …", other errors are prefixed with the key
/// they are about.
fn to_config_error(
    config: &Config,
    name: &str,
    cfg: &HandlerConfig,
    error: KindError,
    spans_in_text: bool,
) -> ConfigError {
    let kind = cfg.kind.get_ref();
    let kind_span = cfg.kind.span();
    let key_span = |key: &str| cfg.settings.get(key).map(Spanned::span);
    match error {
        KindError::Settings(e) => match e.setting() {
            Some(key) => config.error_at(
                key_span(key).unwrap_or(kind_span),
                format!("handlers.{name}.{key}: {}", e.message()),
            ),
            None => config.error_at(kind_span, format!("handlers.{name}: {}", e.message())),
        },
        KindError::Shape { message, span } => {
            let message = message.trim();
            if let Some(key) = quoted_field(message, "unknown field `") {
                return config.error_at(
                    key_span(key).unwrap_or(kind_span),
                    format!("handlers.{name}.{key}: kind {kind:?} does not take {key}"),
                );
            }
            if let Some(key) = quoted_field(message, "missing field `") {
                return config.error_at(
                    kind_span,
                    format!("handlers.{name}: kind {kind:?} needs {key} = …"),
                );
            }
            let span = span.filter(|_| spans_in_text);
            match span.as_ref().and_then(|s| key_at(cfg, s)) {
                Some((key, at)) => config.error_at(at, format!("handlers.{name}.{key}: {message}")),
                None => config.error_at(
                    span.unwrap_or(kind_span),
                    format!("handlers.{name}: {message}"),
                ),
            }
        }
    }
}

/// The field name serde quotes after `prefix` in `message`.
fn quoted_field<'m>(message: &'m str, prefix: &str) -> Option<&'m str> {
    let rest = message.strip_prefix(prefix)?;
    rest.split_once('`').map(|(field, _)| field)
}

/// The setting whose value holds the text at `span`, with its value's span.
fn key_at<'c>(cfg: &'c HandlerConfig, span: &Range<usize>) -> Option<(&'c str, Range<usize>)> {
    cfg.settings
        .iter()
        .map(|(k, v)| (k.as_str(), v.span()))
        .find(|(_, at)| at.start <= span.start && span.start < at.end.max(at.start + 1))
}
