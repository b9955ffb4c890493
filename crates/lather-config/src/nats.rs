//! `[nats]`: the broker that remote handler stages go through, and the placement keys of a
//! handler.

use serde::Deserialize;
use toml::Spanned;

/// The `[nats]` table: where the NATS server is and how subjects are named.
///
/// ```toml
/// [nats]
/// url = "nats://127.0.0.1:4222"
/// subject_prefix = "lather"   # handler subjects are "{prefix}.handler.{name}"
/// connect_timeout_ms = 2000
/// oneway_max_bytes = 268435456  # the oneway work-queue stream's bound (256 MiB)
/// oneway_max_messages = 100000  # and its bound in messages
/// ```
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NatsConfig {
    /// The server's URL, `nats://host:port` (several may be given, comma-separated).
    pub url: Spanned<String>,
    /// First token of every subject lather uses (default `lather`).
    #[serde(default = "default_prefix")]
    pub subject_prefix: String,
    /// How long connecting may take before it counts as unreachable, in milliseconds
    /// (default 2000).
    #[serde(default = "default_connect_timeout")]
    pub connect_timeout_ms: u64,
    /// The most bytes the JetStream work-queue stream of oneway remote handlers holds
    /// (default 256 MiB); when full, further oneway messages go to the handler's fallback.
    #[serde(default = "default_oneway_max_bytes")]
    pub oneway_max_bytes: u64,
    /// The most messages that stream holds (default 100 000); likewise.
    #[serde(default = "default_oneway_max_messages")]
    pub oneway_max_messages: u64,
}

fn default_prefix() -> String {
    "lather".to_owned()
}

fn default_connect_timeout() -> u64 {
    2000
}

fn default_oneway_max_bytes() -> u64 {
    256 * 1024 * 1024
}

fn default_oneway_max_messages() -> u64 {
    100_000
}

impl NatsConfig {
    /// The subject a handler named `name` is served on: `{prefix}.handler.{name}`.
    pub fn handler_subject(&self, name: &str) -> String {
        format!("{}.handler.{name}", self.subject_prefix)
    }

    /// The JetStream subject a oneway handler named `name` is queued on:
    /// `{prefix}.oneway.{name}`.
    pub fn oneway_subject(&self, name: &str) -> String {
        format!("{}.oneway.{name}", self.subject_prefix)
    }
}

/// Where a handler runs: `placement = "local"` (default) or `"remote"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Placement {
    /// In the serving process.
    #[default]
    Local,
    /// On a `lather worker`, reached through NATS.
    Remote,
}

/// What a remote handler does when NATS or every worker is unavailable:
/// `fallback = "fault"` (default) or `"local"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Fallback {
    /// Halt the message with a `HandlerFailed` fault naming the subject and URL.
    #[default]
    Fault,
    /// Run the handler in the serving process.
    Local,
}
