//! `lather`'s exit codes, after BSD's sysexits.h, so service managers and scripts can tell
//! what to do: restart (69, 70), or stop and fix the configuration (78) or the command (64).
//!
//! | Code | Meaning |
//! |---|---|
//! | 0 | success (also `--help`, `--version`, and `serve` or `worker` stopped by SIGINT/SIGTERM) |
//! | 64 | usage: unknown flag or subcommand, missing or bad argument |
//! | 69 | a dependency is unavailable: NATS unreachable at start, the listen address taken, an event source unreachable |
//! | 70 | any other failure while running |
//! | 78 | configuration: file unreadable, TOML or validation errors, bad environment override |
//!
//! A panic exits with 101 (Rust's own code): a bug, to be reported.

use lather_config::ConfigError;
use lather_eventing::client::EventingClientError;
use lather_http::ServeError;
use std::fmt;

/// Success.
pub(crate) const OK: u8 = 0;
/// The command line was wrong (`EX_USAGE`).
pub(crate) const USAGE: u8 = 64;
/// A service lather needs was unavailable (`EX_UNAVAILABLE`).
pub(crate) const UNAVAILABLE: u8 = 69;
/// Any other failure (`EX_SOFTWARE`).
pub(crate) const SOFTWARE: u8 = 70;
/// The configuration was wrong (`EX_CONFIG`).
pub(crate) const CONFIG: u8 = 78;

/// A problem a command finds itself, with the exit code it means.
#[derive(Debug)]
pub(crate) enum Refusal {
    /// The command line asks for something impossible (exit 64).
    Usage(String),
    /// The configuration (or an environment override of it) is wrong (exit 78).
    Config(String),
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::Usage(why) | Refusal::Config(why) => f.write_str(why),
        }
    }
}

impl std::error::Error for Refusal {}

/// The exit code of a failed command: that of the first cause it knows.
pub(crate) fn code_of(error: &anyhow::Error) -> u8 {
    error.chain().find_map(code_of_cause).unwrap_or(SOFTWARE)
}

fn code_of_cause(cause: &(dyn std::error::Error + 'static)) -> Option<u8> {
    if cause.is::<ConfigError>() {
        return Some(CONFIG);
    }
    if let Some(refusal) = cause.downcast_ref::<Refusal>() {
        return Some(match refusal {
            Refusal::Usage(_) => USAGE,
            Refusal::Config(_) => CONFIG,
        });
    }
    if let Some(serve) = cause.downcast_ref::<ServeError>() {
        return Some(match serve {
            e if e.is_config() => CONFIG,
            ServeError::NatsUnreachable(_) | ServeError::Listen { .. } => UNAVAILABLE,
            _ => SOFTWARE,
        });
    }
    if cause.is::<lather_remote::LinkError>() {
        return Some(UNAVAILABLE);
    }
    if let Some(eventing) = cause.downcast_ref::<EventingClientError>() {
        return Some(match eventing {
            EventingClientError::BadUrl { .. } => USAGE,
            EventingClientError::Unreachable { .. } | EventingClientError::Timeout { .. } => {
                UNAVAILABLE
            }
            _ => SOFTWARE,
        });
    }
    None
}

/// Prints `error` to stderr: a configuration error one problem a line, each prefixed
/// `error: `; anything else with its causes.
pub(crate) fn report(error: &anyhow::Error) {
    if let Some(config) = error.chain().find_map(|c| c.downcast_ref::<ConfigError>()) {
        for issue in config.issues() {
            eprintln!("error: {issue}");
        }
        return;
    }
    eprintln!("error: {error:#}");
}
