//! The trust lather's own outbound `https://` calls use: the CAs the system trusts, plus
//! an optional PEM bundle of private CAs (`[server] outbound_ca_file`). Certificates are
//! always verified; there is no way to turn that off.

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;

/// A TLS client stream over TCP, as [`OutboundTls::handshake`] makes it.
pub type TlsStream<S = TcpStream> = tokio_rustls::client::TlsStream<S>;

/// Why a CA bundle cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path:?}: {reason}")]
pub struct TrustError {
    path: String,
    reason: String,
}

impl TrustError {
    fn new(path: &str, reason: impl Into<String>) -> Self {
        TrustError {
            path: path.to_owned(),
            reason: reason.into(),
        }
    }

    /// The bundle's path as given.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// What is wrong with it.
    pub fn reason(&self) -> &str {
        &self.reason
    }
}

/// Why a TLS handshake with a server failed.
#[derive(Debug, thiserror::Error)]
pub enum HandshakeError {
    /// The host cannot be a TLS server name (SNI and the name verified).
    #[error("{0:?} cannot be a TLS server name")]
    BadName(String),
    /// The handshake did not finish in time.
    #[error("the TLS handshake with {host} took longer than {after:?}")]
    Timeout {
        /// The server name.
        host: String,
        /// The time allowed.
        after: Duration,
    },
    /// The handshake failed: an untrusted or expired certificate, a name mismatch, an
    /// alert from the server, a broken connection.
    #[error("the TLS handshake with {host} failed: {source}")]
    Failed {
        /// The server name.
        host: String,
        /// rustls' or the socket's error.
        source: std::io::Error,
    },
}

/// The CAs outbound `https://` calls trust: the system's, plus those of a configured
/// bundle. Cheap to clone; the default is the system's CAs only, read once per process
/// when first needed.
#[derive(Clone, Default)]
pub struct OutboundTls {
    /// The configuration with extra CAs; `None`: the system's roots only (built lazily).
    extra: Option<Arc<rustls::ClientConfig>>,
    /// The name sent in SNI and verified, instead of the URL's host.
    server_name: Option<ServerName<'static>>,
}

impl std::fmt::Debug for OutboundTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OutboundTls")
            .field("extra_cas", &self.extra.is_some())
            .field("server_name", &self.server_name)
            .finish()
    }
}

impl PartialEq for OutboundTls {
    /// The same trust (both the system's only, or the same loaded configuration) and the
    /// same server name.
    fn eq(&self, other: &Self) -> bool {
        let same_trust = match (&self.extra, &other.extra) {
            (None, None) => true,
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            _ => false,
        };
        same_trust && self.server_name == other.server_name
    }
}

impl Eq for OutboundTls {}

impl OutboundTls {
    /// The system's trusted CAs only.
    pub fn system() -> OutboundTls {
        OutboundTls::default()
    }

    /// The system's CAs and every CA certificate of the PEM bundle at `path` (at least
    /// one). An unreadable file, or one without a usable certificate, is an error.
    pub fn with_ca_file(path: &str) -> Result<OutboundTls, TrustError> {
        let pem = std::fs::read(path)
            .map_err(|e| TrustError::new(path, format!("cannot be read: {e}")))?;
        OutboundTls::with_ca_pem(path, &pem)
    }

    /// The system's CAs and the CA certificates of `pem` (named `origin` in errors).
    pub fn with_ca_pem(origin: &str, pem: &[u8]) -> Result<OutboundTls, TrustError> {
        let certs = CertificateDer::pem_slice_iter(pem)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| TrustError::new(origin, format!("is not valid PEM: {e}")))?;
        if certs.is_empty() {
            return Err(TrustError::new(
                origin,
                "holds no certificate (a PEM \"BEGIN CERTIFICATE\" block)",
            ));
        }
        let mut roots = (*system_roots()).clone();
        for cert in certs {
            roots.add(cert).map_err(|e| {
                TrustError::new(
                    origin,
                    format!("holds a certificate that is not a usable CA: {e}"),
                )
            })?;
        }
        Ok(OutboundTls {
            extra: Some(config_with(roots)),
            server_name: None,
        })
    }

    /// A prepared rustls configuration: its own roots and client certificate, as a
    /// gateway's `upstream_*` keys make it. Its ALPN list should be empty (connectors
    /// set their own).
    pub fn from_client_config(config: Arc<rustls::ClientConfig>) -> OutboundTls {
        OutboundTls {
            extra: Some(config),
            server_name: None,
        }
    }

    /// The same trust, sending and verifying `name` instead of the URL's host (a
    /// certificate issued for a name, reached by address).
    pub fn with_server_name(mut self, name: ServerName<'static>) -> OutboundTls {
        self.server_name = Some(name);
        self
    }

    /// The name sent and verified instead of the URL's host, when one is set.
    pub fn server_name(&self) -> Option<&ServerName<'static>> {
        self.server_name.as_ref()
    }

    /// The same trust offering `protocols` in ALPN, for a raw handshake such as HTTP/2
    /// negotiated by [`handshake`](Self::handshake). Not for
    /// [`ClientBuilder::tls`](crate::ClientBuilder::tls): its connector sets ALPN itself and
    /// refuses a configuration that already has some.
    pub fn with_alpn(&self, protocols: &[&[u8]]) -> OutboundTls {
        let mut config = (*self.client_config()).clone();
        config.alpn_protocols = protocols.iter().map(|p| p.to_vec()).collect();
        OutboundTls {
            extra: Some(Arc::new(config)),
            server_name: self.server_name.clone(),
        }
    }

    /// Whether CAs beyond the system's are trusted.
    pub fn has_extra_cas(&self) -> bool {
        self.extra.is_some()
    }

    /// The rustls client configuration (no client certificate, no ALPN).
    pub fn client_config(&self) -> Arc<rustls::ClientConfig> {
        match &self.extra {
            Some(config) => config.clone(),
            None => system_config(),
        }
    }

    /// A TLS handshake over `stream` with the server `host` (the URL's host: sent in SNI
    /// and checked against the certificate; an IP address is checked against the
    /// certificate's IP addresses), within `timeout`.
    pub async fn handshake<S>(
        &self,
        host: &str,
        stream: S,
        timeout: Duration,
    ) -> Result<TlsStream<S>, HandshakeError>
    where
        S: AsyncRead + AsyncWrite + Unpin,
    {
        let name = match &self.server_name {
            Some(name) => name.clone(),
            None => {
                let bare = host.trim_start_matches('[').trim_end_matches(']');
                ServerName::try_from(bare.to_owned())
                    .map_err(|_| HandshakeError::BadName(host.to_owned()))?
            }
        };
        let connector = tokio_rustls::TlsConnector::from(self.client_config());
        match tokio::time::timeout(timeout, connector.connect(name, stream)).await {
            Err(_) => Err(HandshakeError::Timeout {
                host: host.to_owned(),
                after: timeout,
            }),
            Ok(Err(source)) => Err(HandshakeError::Failed {
                host: host.to_owned(),
                source,
            }),
            Ok(Ok(tls)) => Ok(tls),
        }
    }
}

/// A client configuration trusting `roots`, with the ring provider.
fn config_with(roots: rustls::RootCertStore) -> Arc<rustls::ClientConfig> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap_or_else(|_| {
            // The ring provider supports the default versions; this is never reached.
            rustls::ClientConfig::builder_with_protocol_versions(rustls::DEFAULT_VERSIONS)
        });
    // No ALPN here: connectors that set it themselves (hyper-rustls) require none, and a
    // server speaks HTTP/1.1 to a client offering none.
    Arc::new(builder.with_root_certificates(roots).with_no_client_auth())
}

/// The configuration trusting the system's CAs only, made once per process.
fn system_config() -> Arc<rustls::ClientConfig> {
    static CONFIG: OnceLock<Arc<rustls::ClientConfig>> = OnceLock::new();
    CONFIG
        .get_or_init(|| config_with((*system_roots()).clone()))
        .clone()
}

/// The system's trusted CAs (rustls-native-certs: `/etc/ssl/certs` and the like;
/// `SSL_CERT_FILE` / `SSL_CERT_DIR` override), read once per process and shared by every
/// TLS client of lather's (this crate's, and a gateway's towards its upstreams).
pub fn system_roots() -> Arc<rustls::RootCertStore> {
    static ROOTS: OnceLock<Arc<rustls::RootCertStore>> = OnceLock::new();
    ROOTS
        .get_or_init(|| {
            let found = rustls_native_certs::load_native_certs();
            let mut roots = rustls::RootCertStore::empty();
            // Unreadable system certificates are skipped: a server they would have
            // verified fails its handshake, which names the reason.
            roots.add_parsable_certificates(found.certs);
            Arc::new(roots)
        })
        .clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bundle_without_a_certificate_is_refused() {
        let err = OutboundTls::with_ca_pem("ca.pem", b"nothing here").unwrap_err();
        assert!(err.reason().contains("no certificate"), "{err}");
        let err = OutboundTls::with_ca_file("/nonexistent/ca.pem").unwrap_err();
        assert!(err.reason().contains("cannot be read"), "{err}");
    }
}
