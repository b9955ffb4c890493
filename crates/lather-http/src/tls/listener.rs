//! The listener's TLS: a rustls server configuration from `[server.tls]` — the certificate
//! (reloaded when its files change), client certificates as `client_auth` asks, ALPN `h2`
//! and `http/1.1`.

use super::TlsError;
use super::reload::{CertResolver, Contents, PairFiles};
use lather_config::{ClientAuth, TlsConfig};
use rustls::server::WebPkiClientVerifier;
use std::sync::Arc;
use std::time::Duration;
use tokio_rustls::TlsAcceptor;

/// The listener's TLS, loaded and checked at start.
#[derive(Debug)]
pub(crate) struct ListenerTls {
    config: Arc<rustls::ServerConfig>,
    resolver: Arc<CertResolver>,
    /// How often the pair is checked for a change, the files and what they held at start.
    reload: Option<(Duration, PairFiles, Contents)>,
}

impl ListenerTls {
    /// Reads the certificate, key and client CAs of `config`; an error names the key and
    /// file that cannot be used.
    pub(crate) fn load(config: &TlsConfig) -> Result<Self, TlsError> {
        let files = PairFiles {
            cert: config.cert_file.get_ref().clone(),
            key: config.key_file.get_ref().clone(),
        };
        let (pair, contents) = files.load_now()?;
        let resolver = CertResolver::new(pair);
        let builder = rustls::ServerConfig::builder_with_provider(super::provider())
            .with_safe_default_protocol_versions()
            .map_err(|e| TlsError::new("server.tls", "", e.to_string()))?;
        let builder = match (config.client_auth(), &config.client_ca_file) {
            (ClientAuth::None, _) | (_, None) => builder.with_no_client_auth(),
            (auth, Some(ca)) => {
                let key = "server.tls.client_ca_file";
                let roots = super::pem::roots(key, ca.get_ref())?;
                let verifier =
                    WebPkiClientVerifier::builder_with_provider(Arc::new(roots), super::provider());
                let verifier = if auth == ClientAuth::Optional {
                    verifier.allow_unauthenticated()
                } else {
                    verifier
                };
                let verifier = verifier
                    .build()
                    .map_err(|e| TlsError::new(key, ca.get_ref(), e.to_string()))?;
                builder.with_client_cert_verifier(verifier)
            }
        };
        let mut server = builder.with_cert_resolver(resolver.clone());
        server.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Ok(ListenerTls {
            config: Arc::new(server),
            resolver,
            reload: config.reload_check().map(|every| (every, files, contents)),
        })
    }

    /// Starts checking the certificate files for a change (when `reload_check_ms` is not
    /// 0); the check stops with the listener. Must be called within a tokio runtime.
    pub(crate) fn start_reloading(&mut self) {
        if let Some((every, files, contents)) = self.reload.take() {
            tokio::spawn(super::reload::watch(
                Arc::downgrade(&self.resolver),
                files,
                contents,
                every,
            ));
        }
    }

    /// What accepts a connection's handshake.
    pub(crate) fn acceptor(&self) -> TlsAcceptor {
        TlsAcceptor::from(self.config.clone())
    }

    /// The server configuration (its certificate follows reloads).
    pub(crate) fn config(&self) -> Arc<rustls::ServerConfig> {
        self.config.clone()
    }
}
