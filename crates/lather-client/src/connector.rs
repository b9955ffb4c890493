//! How the client dials: the connector and the URL schemes it can reach (`http://`, and
//! `https://` with rustls, verified against the builder's [`OutboundTls`](crate::OutboundTls)).
//! Nothing else in the crate knows how bytes reach the peer.

use crate::builder::ClientBuilder;
use crate::error::ClientError;
use http::Uri;
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::connect::HttpConnector;

/// The connector the pool dials with: TCP, and TLS for `https://` URLs (HTTP/1.1).
pub(crate) type Connector = HttpsConnector<HttpConnector>;

/// A connector with the builder's connect timeout, `TCP_NODELAY` set (SOAP requests are
/// small and latency matters more than packet count), TLS with the builder's trust. The
/// request timeout bounds the TLS handshake too.
pub(crate) fn connector(settings: &ClientBuilder) -> Connector {
    let mut tcp = HttpConnector::new();
    tcp.set_nodelay(true);
    tcp.set_connect_timeout(Some(settings.connect_timeout));
    tcp.enforce_http(false);
    let schemes = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config((*settings.tls.client_config()).clone())
        .https_or_http();
    let schemes = match settings.tls.server_name() {
        Some(name) => schemes
            .with_server_name_resolver(hyper_rustls::FixedServerNameResolver::new(name.clone())),
        None => schemes,
    };
    schemes.enable_http1().wrap_connector(tcp)
}

/// `url` as a URI the connector can reach: an `http://` or `https://` URL with a host.
pub(crate) fn checked_uri(url: &str) -> Result<Uri, ClientError> {
    let bad = |reason: &'static str| ClientError::InvalidUrl {
        url: url.to_owned(),
        reason,
    };
    let uri: Uri = url.parse().map_err(|_| bad("not a URL"))?;
    match uri.scheme_str() {
        Some("http" | "https") => {}
        Some(_) => return Err(bad("only http:// and https:// URLs are supported")),
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
    fn only_http_and_https_urls_with_a_host_pass() {
        assert!(checked_uri("http://127.0.0.1:8080/echo").is_ok());
        assert!(checked_uri("https://example.org/echo").is_ok());
        for url in ["ftp://h/", "/echo", "not a url", "http:///x"] {
            assert!(
                matches!(checked_uri(url), Err(ClientError::InvalidUrl { .. })),
                "{url}"
            );
        }
    }
}
