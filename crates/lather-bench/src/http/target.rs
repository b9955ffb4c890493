//! The target URL: where to connect and what to put in the request line.

use std::net::SocketAddr;

use http::Uri;

use crate::error::BenchError;

/// A parsed `http://host[:port]/path?query` URL.
#[derive(Debug, Clone)]
pub(crate) struct TargetUrl {
    /// `host[:port]` as written, for the `Host` header.
    pub(crate) authority: String,
    host: String,
    port: u16,
    /// Origin-form request target.
    pub(crate) path: Uri,
}

impl TargetUrl {
    /// Parses `url`; only `http://` is supported.
    pub(crate) fn parse(url: &str) -> Result<Self, BenchError> {
        let invalid = |reason: &str| BenchError::InvalidUrl {
            url: url.to_owned(),
            reason: reason.to_owned(),
        };
        let uri: Uri = url
            .parse()
            .map_err(|e: http::uri::InvalidUri| invalid(&e.to_string()))?;
        match uri.scheme_str() {
            Some("http") => {}
            Some("https") => return Err(invalid("https is not supported")),
            Some(_) => return Err(invalid("the scheme must be http")),
            None => return Err(invalid("missing http:// scheme")),
        }
        let authority = uri.authority().ok_or_else(|| invalid("missing host"))?;
        let host = authority
            .host()
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_owned();
        let port = authority.port_u16().unwrap_or(80);
        let path = uri
            .path_and_query()
            .map_or("/", |pq| pq.as_str())
            .parse::<Uri>()
            .map_err(|e| invalid(&e.to_string()))?;
        Ok(Self {
            authority: authority.as_str().to_owned(),
            host,
            port,
            path,
        })
    }

    /// Resolves the host once; the first address is used for every
    /// connection.
    pub(crate) async fn resolve(&self) -> Result<SocketAddr, BenchError> {
        let resolve_err = |source| BenchError::Resolve {
            host: format!("{}:{}", self.host, self.port),
            source,
        };
        let mut addrs = tokio::net::lookup_host((self.host.as_str(), self.port))
            .await
            .map_err(resolve_err)?;
        addrs.next().ok_or_else(|| {
            resolve_err(std::io::Error::new(
                std::io::ErrorKind::NotFound,
                "no address",
            ))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_http_urls() {
        let t = TargetUrl::parse("http://127.0.0.1:18080/echo?x=1").unwrap();
        assert_eq!(t.authority, "127.0.0.1:18080");
        assert_eq!(t.host, "127.0.0.1");
        assert_eq!(t.port, 18080);
        assert_eq!(t.path, "/echo?x=1");

        let t = TargetUrl::parse("http://[::1]").unwrap();
        assert_eq!(t.host, "::1");
        assert_eq!(t.port, 80);
        assert_eq!(t.path, "/");
    }

    #[test]
    fn rejects_other_schemes() {
        assert!(TargetUrl::parse("https://localhost/").is_err());
        assert!(TargetUrl::parse("localhost:80/x").is_err());
        assert!(TargetUrl::parse("ftp://localhost/").is_err());
    }
}
