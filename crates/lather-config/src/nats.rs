//! `[nats]`: the broker that remote handler stages go through, and the placement keys of a
//! handler.

use crate::secret::Secret;
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
/// ack_timeout_ms = 100          # a remote call not acknowledged by then is lost
/// heartbeat_ms = 200            # workers heartbeat long calls; 3 missed: the call is lost
/// batch_max_items = 1           # remote calls to one handler sent together (1: each alone)
/// batch_wait_ms = 1             # the longest a call waits for others to join its batch
/// tls_ca_file = "/etc/lather/nats-ca.pem"   # TLS (docs/tls.md)
/// user = "lather"                           # one authentication method at most
/// password = "${NATS_PASSWORD}"
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
    /// How long a remote call waits for the worker's acknowledgement, in milliseconds
    /// (default 100); none by then and the call is lost (see docs/handlers.md).
    pub ack_timeout_ms: Option<Spanned<u64>>,
    /// How often a worker tells the caller it is still working on a call, in milliseconds
    /// (default 200, at least 10); three intervals without a word and the call is lost.
    pub heartbeat_ms: Option<Spanned<u64>>,
    /// The most remote calls to one handler sent to the workers as one NATS message
    /// (default 1: each alone; at most [`MAX_FRAME_BATCH`]).
    pub batch_max_items: Option<Spanned<u64>>,
    /// How long the first call of a batch waits for others, in milliseconds (default 1, at
    /// most 1000); a batch that fills goes at once.
    pub batch_wait_ms: Option<Spanned<u64>>,
    /// The CAs the server's certificate is verified against, a PEM bundle (default: the
    /// system's roots).
    pub tls_ca_file: Option<Spanned<String>>,
    /// lather's client certificate, PEM, for a server that asks for one (with
    /// `tls_client_key_file`).
    pub tls_client_cert_file: Option<Spanned<String>>,
    /// The client certificate's private key, PEM (with `tls_client_cert_file`).
    pub tls_client_key_file: Option<Spanned<String>>,
    /// Whether the connection must use TLS (default: on when the URL is `tls://` or a CA
    /// or client certificate is set; see [`NatsConfig::tls_required`]).
    pub tls_required: Option<Spanned<bool>>,
    /// A NATS `.creds` file (user JWT and nkey seed) to authenticate with.
    pub credentials_file: Option<Spanned<String>>,
    /// A file holding an nkey seed (`SU…`) to authenticate with.
    pub nkey_seed_file: Option<Spanned<String>>,
    /// The user name to authenticate with (with `password`).
    pub user: Option<Spanned<String>>,
    /// The password of `user` (`${ENV}` substitution keeps it out of the file).
    pub password: Option<Spanned<Secret>>,
    /// A token to authenticate with.
    pub token: Option<Spanned<Secret>>,
}

/// Largest `[nats] batch_max_items`.
pub const MAX_FRAME_BATCH: u64 = 256;
/// Default of `[nats] batch_wait_ms`.
pub const DEFAULT_FRAME_BATCH_WAIT_MS: u64 = 1;

/// Default of `[nats] ack_timeout_ms`.
pub const DEFAULT_ACK_TIMEOUT_MS: u64 = 100;
/// Default of `[nats] heartbeat_ms`.
pub const DEFAULT_HEARTBEAT_MS: u64 = 200;
/// Largest `[nats] ack_timeout_ms` and `heartbeat_ms` accepted (one minute).
pub const MAX_LIVENESS_MS: u64 = 60_000;

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
    /// How long a remote call waits for its acknowledgement (`ack_timeout_ms`).
    pub fn ack_timeout(&self) -> std::time::Duration {
        std::time::Duration::from_millis(
            self.ack_timeout_ms
                .as_ref()
                .map_or(DEFAULT_ACK_TIMEOUT_MS, |v| *v.get_ref()),
        )
    }

    /// How often workers heartbeat a call in hand (`heartbeat_ms`).
    pub fn heartbeat(&self) -> std::time::Duration {
        std::time::Duration::from_millis(
            self.heartbeat_ms
                .as_ref()
                .map_or(DEFAULT_HEARTBEAT_MS, |v| *v.get_ref()),
        )
    }

    /// The transfer-batching cut-offs of remote calls: `batch_max_items` (1: off) and
    /// `batch_wait_ms`.
    pub fn frame_batch(&self) -> (usize, std::time::Duration) {
        let items = self.batch_max_items.as_ref().map_or(1, |v| *v.get_ref());
        let wait = self
            .batch_wait_ms
            .as_ref()
            .map_or(DEFAULT_FRAME_BATCH_WAIT_MS, |v| *v.get_ref());
        (
            usize::try_from(items).unwrap_or(1).max(1),
            std::time::Duration::from_millis(wait),
        )
    }

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

/// Where a handler runs: `placement = "local"` (default), `"remote"` or `"auto"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Placement {
    /// In the serving process.
    #[default]
    Local,
    /// On a `lather worker`, reached through NATS.
    Remote,
    /// Per call, on whichever side the message is measured to finish sooner: in the
    /// serving process or on a `lather worker` (falls back to local when NATS or the
    /// workers are unavailable).
    Auto,
}

impl Placement {
    /// Whether the handler may run on a worker (`remote` or `auto`), so it needs `[nats]`
    /// and `lather worker` hosts it.
    pub fn uses_workers(self) -> bool {
        matches!(self, Placement::Remote | Placement::Auto)
    }
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
