//! `logging`: one structured line per message.

use lather_pipeline::{
    Access, BuildEnv, Handler, HandlerFuture, HandlerKind, Message, Parts, SettingsError, Verdict,
};
use serde::Deserialize;
use std::sync::Arc;

/// Writes one structured log line per message (target `lather::message`, level INFO): the
/// message id, service, action, operation and size in bytes.
#[derive(Debug, Clone, Default)]
pub struct Logging;

impl Handler for Logging {
    fn access(&self) -> Access {
        Access::read_only(Parts::none().body())
    }

    fn call<'a>(&'a self, message: &'a Message) -> HandlerFuture<'a> {
        Box::pin(async move {
            let ctx = message.context();
            let envelope = message.envelope();
            let operation = envelope
                .operation()
                .map(ToString::to_string)
                .unwrap_or_default();
            tracing::info!(
                target: "lather::message",
                id = %format!("{:032x}", ctx.id),
                service = %ctx.service,
                action = ctx.action.as_deref().unwrap_or(""),
                operation = %operation,
                bytes = envelope.as_bytes().len(),
                "message"
            );
            Verdict::proceed()
        })
    }
}

/// The `logging` kind: no settings.
#[derive(Debug, Clone, Copy, Default)]
pub struct LoggingKind;

/// `[handlers.NAME]` settings of kind `logging`: none.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoggingSettings {}

impl HandlerKind for LoggingKind {
    type Settings = LoggingSettings;

    fn name(&self) -> &'static str {
        "logging"
    }

    fn build(
        &self,
        _settings: LoggingSettings,
        _env: &BuildEnv<'_>,
    ) -> Result<Arc<dyn Handler>, SettingsError> {
        Ok(Arc::new(Logging))
    }
}
