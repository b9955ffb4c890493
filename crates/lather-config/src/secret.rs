//! A secret configuration value that never shows in logs or debug output.

use serde::Deserialize;
use std::fmt;

/// A secret configuration value (`[nats] password`, `token`): its `Debug` shows `***`, so
/// it never reaches a log line through the configuration.
#[derive(Clone, PartialEq, Eq, Deserialize)]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    /// The secret itself, for the one place that hands it to the NATS client.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("\"***\"")
    }
}
