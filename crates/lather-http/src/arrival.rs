//! How a request reached lather, kept in its message context for a gateway to tell its
//! backend (`Forwarded`, `X-Forwarded-*`) and to find the backend path below a prefix.

use crate::scheme::Scheme;
use http::HeaderValue;
use std::net::SocketAddr;

/// Where a request came from and how, as a gateway forwards it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Arrival {
    /// The connection's remote address, when known.
    pub(crate) peer: Option<SocketAddr>,
    /// Whether `peer` is one of `[server] trusted_proxies` (its `Forwarded` and
    /// `X-Forwarded-*` headers are then kept and extended).
    pub(crate) peer_trusted: bool,
    /// The scheme the request came by.
    pub(crate) scheme: Scheme,
    /// The authority the client asked for (absolute-form or `Host`), when it is a valid
    /// `host[:port]`; kept as the header value, so `X-Forwarded-Host` shares its bytes.
    pub(crate) host: Option<HeaderValue>,
    /// For a service answering a prefix (`path = "/api/*"`): the rest of the request's
    /// path below the prefix (empty or starting with `/`) and its query, if any.
    pub(crate) below_prefix: Option<(String, Option<String>)>,
}
