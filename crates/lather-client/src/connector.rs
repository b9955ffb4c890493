//! How the client dials: the connector and the URL schemes it can reach.
//!
//! This is the seam for TLS: a TLS connector wrapping [`Connector`] replaces it here, and
//! [`checked_uri`] accepts `https` once it does. Nothing else in the crate knows how bytes
//! reach the peer.

use crate::builder::ClientBuilder;
use crate::error::ClientError;
use http::Uri;
use hyper_util::client::legacy::connect::HttpConnector;

/// The connector the pool dials with: plain TCP, `http://` only.
pub(crate) type Connector = HttpConnector;

/// A connector with the builder's connect timeout, `TCP_NODELAY` set (SOAP requests are
/// small and latency matters more than packet count).
pub(crate) fn connector(settings: &ClientBuilder) -> Connector {
    let mut connector = HttpConnector::new();
    connector.set_nodelay(true);
    connector.set_connect_timeout(Some(settings.connect_timeout));
    connector
}

/// `url` as a URI the connector can reach: an `http://` URL with a host.
pub(crate) fn checked_uri(url: &str) -> Result<Uri, ClientError> {
    let bad = |reason: &'static str| ClientError::InvalidUrl {
        url: url.to_owned(),
        reason,
    };
    let uri: Uri = url.parse().map_err(|_| bad("not a URL"))?;
    match uri.scheme_str() {
        Some("http") => {}
        Some("https") => return Err(bad("https is not supported yet (http:// only)")),
        Some(_) => return Err(bad("only http:// URLs are supported")),
        None => return Err(bad("not an absolute URL (no scheme)")),
    }
    if uri.host().is_none_or(str::is_empty) {
        return Err(bad("the URL names no host"));
    }
    Ok(uri)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_http_urls_with_a_host_pass() {
        assert!(checked_uri("http://127.0.0.1:8080/echo").is_ok());
        for url in [
            "https://example.org/",
            "ftp://h/",
            "/echo",
            "not a url",
            "http:///x",
        ] {
            assert!(
                matches!(checked_uri(url), Err(ClientError::InvalidUrl { .. })),
                "{url}"
            );
        }
    }
}
