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
            // The fields are worked out only when the line is written (the macro checks
            // the level first): naming the operation costs more than the rest of the call.
            tracing::info!(
                target: "lather::message",
                id = %format!("{:032x}", ctx.id),
                service = %ctx.service,
                action = ctx.action.as_deref().unwrap_or(""),
                operation = %envelope
                    .operation()
                    .map(ToString::to_string)
                    .unwrap_or_default(),
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

#[cfg(test)]
mod tests {
    use super::*;
    use lather_envelope::{Envelope, Limits};
    use lather_pipeline::Context;
    use lather_test_util::log::logged_at;

    fn message() -> Message {
        let text = r#"<s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope"><s:Body><m:quote xmlns:m="urn:m"/></s:Body></s:Envelope>"#;
        let envelope =
            Envelope::parse(text.as_bytes().to_vec().into(), &Limits::default()).unwrap();
        let context = Context {
            id: 0xab,
            service: "stock".into(),
            ..Context::default()
        };
        Message::new(envelope, context)
    }

    /// What one call of the handler logs at `level`.
    fn logged_by_a_call(level: tracing::Level) -> String {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        logged_at(level, || {
            let message = message();
            let verdict = runtime.block_on(Logging.call(&message));
            assert!(matches!(verdict, Verdict::Continue(_)));
        })
    }

    #[test]
    fn one_line_names_the_message_service_operation_and_size() {
        let line = logged_by_a_call(tracing::Level::INFO);
        assert_eq!(line.lines().count(), 1, "{line}");
        assert!(line.contains("lather::message"), "{line}");
        assert!(line.contains(&format!("id={:032x}", 0xab)), "{line}");
        assert!(line.contains("service=stock"), "{line}");
        assert!(line.contains("operation={urn:m}quote"), "{line}");
        assert!(
            line.contains(&format!("bytes={}", message().envelope().as_bytes().len())),
            "{line}"
        );
    }

    #[test]
    fn nothing_is_written_below_the_level() {
        assert_eq!(logged_by_a_call(tracing::Level::WARN), "");
    }
}
