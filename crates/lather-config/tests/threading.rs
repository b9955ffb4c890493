//! `[server] threading`: per-core by default; the other word accepted; others refused.

use lather_config::{Config, Threading};

#[test]
fn per_core_is_the_default_and_other_words_are_refused() {
    let config = Config::from_toml("", "t.toml").unwrap();
    assert_eq!(config.server.threading, Threading::PerCore);
    let config = Config::from_toml("[server]\nthreading = \"work-stealing\"\n", "t.toml").unwrap();
    assert_eq!(config.server.threading, Threading::WorkStealing);
    assert_eq!(config.server.threading.as_str(), "work-stealing");
    let err = Config::from_toml("[server]\nthreading = \"per-thread\"\n", "t.toml").unwrap_err();
    assert!(err.to_string().contains("per-core"), "{err}");
}
