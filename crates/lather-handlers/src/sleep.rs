//! `sleep`: waits a fixed time on each message.

use lather_pipeline::{
    Access, BuildEnv, Handler, HandlerFuture, HandlerKind, Message, SettingsError, Verdict,
};
use serde::Deserialize;
use std::sync::Arc;
use std::time::Duration;

/// Waits a fixed time per message without using a core, then continues unchanged. A
/// benchmark aid: a stand-in for I/O-bound handlers (a store, a remote check) of known
/// latency.
#[derive(Debug, Clone)]
pub struct Sleep {
    wait: Duration,
}

impl Sleep {
    /// Waits `millis` milliseconds per message.
    pub fn new(millis: u64) -> Self {
        Sleep {
            wait: Duration::from_millis(millis),
        }
    }
}

impl Handler for Sleep {
    fn access(&self) -> Access {
        Access::default()
    }

    fn call<'a>(&'a self, _message: &'a Message) -> HandlerFuture<'a> {
        Box::pin(async move {
            tokio::time::sleep(self.wait).await;
            Verdict::proceed()
        })
    }
}

/// The `sleep` kind.
#[derive(Debug, Clone, Copy, Default)]
pub struct SleepKind;

/// `[handlers.NAME]` settings of kind `sleep`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SleepSettings {
    /// Milliseconds to wait per message (required).
    pub millis: u64,
}

impl HandlerKind for SleepKind {
    type Settings = SleepSettings;

    fn name(&self) -> &'static str {
        "sleep"
    }

    fn build(
        &self,
        settings: SleepSettings,
        _env: &BuildEnv<'_>,
    ) -> Result<Arc<dyn Handler>, SettingsError> {
        Ok(Arc::new(Sleep::new(settings.millis)))
    }
}
