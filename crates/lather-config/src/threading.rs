//! `[server] threading`: how the runtime threads share the connections.

use serde::Deserialize;

/// How `lather serve` spreads connections over its `workers` threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Threading {
    /// One runtime per thread, each accepting on the listening socket: a connection and
    /// its requests stay on the thread that accepted it, and threads do not wake each
    /// other for its I/O.
    PerCore,
    /// One runtime whose threads steal ready tasks from each other: an idle thread takes
    /// work from a busy one, at the price of waking threads for it.
    #[default]
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
