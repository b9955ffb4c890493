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

#[cfg(test)]
mod tests {
    use crate::{Config, Threading};

    #[test]
    fn per_core_is_the_default_and_other_words_are_refused() {
        let config = Config::from_toml("", "t.toml").unwrap();
        assert_eq!(config.server.threading, Threading::PerCore);
        let config =
            Config::from_toml("[server]\nthreading = \"work-stealing\"\n", "t.toml").unwrap();
        assert_eq!(config.server.threading, Threading::WorkStealing);
        assert_eq!(config.server.threading.as_str(), "work-stealing");
        let err =
            Config::from_toml("[server]\nthreading = \"per-thread\"\n", "t.toml").unwrap_err();
        assert!(err.to_string().contains("per-core"), "{err}");
    }
}
