//! `upstream_protocol`: how a gateway speaks to its upstreams.

use serde::Deserialize;

/// The HTTP version a gateway uses towards its upstreams.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum UpstreamProtocol {
    /// HTTP/1.1 over pooled keep-alive connections, one request at a time on each (the
    /// default). Over `https://` the TLS handshake offers only `http/1.1` by ALPN.
    #[default]
    Http1,
    /// HTTP/2: many requests at once on each of a few connections. Over `http://` with
    /// prior knowledge (h2c); over `https://` negotiated by ALPN (only `h2` is offered, so an
    /// upstream without HTTP/2 fails). The upstream must speak it, as lather
    /// does. `"h2c"` is accepted as the older spelling.
    #[serde(alias = "h2c")]
    H2,
}

impl UpstreamProtocol {
    /// The keyword as written in the configuration.
    pub fn as_str(self) -> &'static str {
        match self {
            UpstreamProtocol::Http1 => "http1",
            UpstreamProtocol::H2 => "h2",
        }
    }
}
