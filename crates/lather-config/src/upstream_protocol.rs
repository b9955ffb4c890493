//! `upstream_protocol`: how a gateway speaks to its upstreams.

use serde::Deserialize;

/// The HTTP version a gateway uses towards its upstreams.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum UpstreamProtocol {
    /// HTTP/1.1 over pooled keep-alive connections, one request at a time on each (the
    /// default).
    #[default]
    Http1,
    /// HTTP/2 over cleartext TCP with prior knowledge (h2c): many requests at once on each
    /// of a few connections. The upstream must speak it, as lather does.
    H2c,
}
