//! The shapes of the message-stream settings: the `[stream]` table and the values of a
//! gateway's `stream` and `stream_on_error` (checked in `stream`).

use serde::Deserialize;
use std::net::SocketAddr;

/// `[stream]`: the listener for negotiated message streams and its bounds. Without it,
/// this server refuses every `OpenStream` and its clients stay on SOAP/HTTP.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct StreamConfig {
    /// Address stream connections are accepted on (default `127.0.0.1:0`, a free port on
    /// loopback; the port is told to the sender in the negotiation).
    pub listen: SocketAddr,
    /// The port told to senders when it differs from the one bound — a port forward or a
    /// relay in front (default: the bound port). Senders connect to it on the host of the
    /// URL they negotiated with.
    pub public_port: Option<u16>,
    /// Stream connections open at once (default 256); beyond it a new one is closed at once.
    pub max_connections: usize,
    /// Requests of one connection handled at once (default 256); beyond it the connection
    /// is not read until one is answered.
    pub max_in_flight: usize,
    /// Message shapes each direction of a stream may define (default 64); a message of
    /// another shape goes as plain SOAP/HTTP.
    pub max_schemas: usize,
    /// Longest wait for a connection's preface, and for a frame once it has begun, in
    /// milliseconds (default 10 000).
    pub frame_timeout_ms: u64,
    /// A stream connection with nothing in flight that sends nothing for this long is
    /// closed, in milliseconds (default 300 000).
    pub idle_timeout_ms: u64,
    /// How long a granted stream token may wait for its connection, in seconds (default 30).
    pub token_lifetime_s: u64,
    /// Whether stream connections speak TLS, with the listener's certificate and client
    /// authentication (`[server.tls]`). Default: on exactly when `[server.tls]` is set;
    /// `true` without it is a configuration error.
    pub tls: Option<bool>,
}

impl Default for StreamConfig {
    fn default() -> Self {
        StreamConfig {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            public_port: None,
            max_connections: 256,
            max_in_flight: 256,
            max_schemas: 64,
            frame_timeout_ms: 10_000,
            idle_timeout_ms: 300_000,
            token_lifetime_s: 30,
            tls: None,
        }
    }
}

/// A gateway's `stream`: how it sends to its upstreams.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum StreamMode {
    /// Plain SOAP/HTTP only (the default).
    #[default]
    Off,
    /// Negotiate a stream over TCP per upstream and operation; SOAP/HTTP until it is open
    /// and for every message that does not fit it.
    Tcp,
    /// The same, the stream carried in one HTTP/2 request to the upstream's own URL
    /// (h2c), for where only HTTP gets through.
    H2,
}

/// A gateway's `stream_on_error`: a request written to a stream lost before its answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum StreamOnError {
    /// Answer `UpstreamFailed` (the default): it may have been processed.
    #[default]
    Fault,
    /// Send it again as SOAP/HTTP (for idempotent operations only).
    Resend,
}
