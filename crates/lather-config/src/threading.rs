//! `[server] threading`: how the runtime threads share the connections.

use serde::Deserialize;

/// How `lather serve` spreads connections over its `workers` threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Threading {
    /// One runtime per thread (the default): each connection is handed to the thread
    /// serving the fewest and stays there with its requests, so threads do not wake each
    /// other for its I/O.
    #[default]
    PerCore,
    /// One runtime whose threads steal ready tasks from each other: an idle thread takes
    /// work from a busy one, at the price of waking threads for it.
    WorkStealing,
}

impl Threading {
    /// The keyword as written in the configuration.
    pub fn as_str(self) -> &'static str {
        match self {
            Threading::PerCore => "per-core",
            Threading::WorkStealing => "work-stealing",
        }
    }
}
