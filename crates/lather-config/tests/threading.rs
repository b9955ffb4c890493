//! `[server] threading`: per-core by default; the other word accepted; others refused. `[server] pin_io_threads`: true by default, a boolean.

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

#[test]
fn io_threads_are_pinned_by_default_and_the_key_takes_a_boolean() {
    let config = Config::from_toml("", "t.toml").unwrap();
    assert!(config.server.pin_io_threads);
    let config = Config::from_toml("[server]\npin_io_threads = false\n", "t.toml").unwrap();
    assert!(!config.server.pin_io_threads);
    let err = Config::from_toml("[server]\npin_io_threads = \"yes\"\n", "t.toml").unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("pin_io_threads") || text.contains("line 2"),
        "{text}"
    );
    assert!(text.contains("bool"), "{text}");
}
