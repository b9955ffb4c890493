//! The listener's TLS: a rustls server configuration from `[server.tls]` — the certificate
//! (reloaded when its files change), client certificates as `client_auth` asks (their CA
//! bundle reloaded too), ALPN `h2` and `http/1.1`.

use super::TlsError;
use super::reload::{CertResolver, Contents, PairFiles};
use lather_config::{ClientAuth, TlsConfig};
use rustls::server::WebPkiClientVerifier;
use std::sync::{Arc, PoisonError, RwLock, Weak};
use std::time::Duration;
use tokio_rustls::TlsAcceptor;

/// The configuration key of the client CA bundle, for errors.
const CLIENT_CA_KEY: &str = "server.tls.client_ca_file";

/// The server configuration new handshakes use, replaced when the client CA bundle changes
/// (the certificate itself is swapped inside it, by its resolver). Shared by the HTTP
/// listener and the stream port.
#[derive(Debug, Clone)]
pub(crate) struct SharedServerConfig(Arc<RwLock<Arc<rustls::ServerConfig>>>);

impl SharedServerConfig {
    /// What accepts a connection's handshake now.
    pub(crate) fn acceptor(&self) -> TlsAcceptor {
        TlsAcceptor::from(
            self.0
                .read()
                .unwrap_or_else(PoisonError::into_inner)
                .clone(),
        )
    }

    fn replace(&self, next: rustls::ServerConfig) {
        *self.0.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(next);
    }
}

/// Where client certificates are verified against: the bundle's path, what `client_auth`
/// asks, and what the file held when last read.
#[derive(Debug)]
struct ClientCas {
    path: String,
    auth: ClientAuth,
    seen: Vec<u8>,
}

/// The listener's TLS, loaded and checked at start.
#[derive(Debug)]
pub(crate) struct ListenerTls {
    config: SharedServerConfig,
    resolver: Arc<CertResolver>,
    /// How often the files are checked for a change (none: never).
    every: Option<Duration>,
    /// The pair's files and what they held at start, until the check starts.
    pair: Option<(PairFiles, Contents)>,
    /// The client CA bundle, when client certificates are asked for, until the check starts.
    clients: Option<ClientCas>,
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
        let clients = match (config.client_auth(), &config.client_ca_file) {
            (ClientAuth::None, _) | (_, None) => None,
            (auth, Some(ca)) => Some(ClientCas {
                path: ca.get_ref().clone(),
                auth,
                seen: super::pem::read(CLIENT_CA_KEY, ca.get_ref())?,
            }),
        };
        let server = server_config(&resolver, clients.as_ref())?;
        Ok(ListenerTls {
            config: SharedServerConfig(Arc::new(RwLock::new(Arc::new(server)))),
            resolver,
            every: config.reload_check(),
            pair: Some((files, contents)),
            clients,
        })
    }

    /// Starts checking the certificate files and the client CA bundle for a change (when
    /// `reload_check_ms` is not 0); the checks stop with the listener. Must be called
    /// within a tokio runtime.
    pub(crate) fn start_reloading(&mut self) {
        let Some(every) = self.every else {
            return;
        };
        if let Some((files, contents)) = self.pair.take() {
            tokio::spawn(super::reload::watch(
                Arc::downgrade(&self.resolver),
                files,
                contents,
                every,
            ));
        }
        if let Some(clients) = self.clients.take() {
            tokio::spawn(watch_client_cas(
                Arc::downgrade(&self.config.0),
                self.resolver.clone(),
                clients,
                every,
            ));
        }
    }

    /// The server configuration, following both reloads.
    pub(crate) fn config(&self) -> SharedServerConfig {
        self.config.clone()
    }
}

/// A server configuration presenting `resolver`'s certificate, verifying client
/// certificates against `clients` when given, offering ALPN h2 and http/1.1.
fn server_config(
    resolver: &Arc<CertResolver>,
    clients: Option<&ClientCas>,
) -> Result<rustls::ServerConfig, TlsError> {
    let builder = rustls::ServerConfig::builder_with_provider(super::provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsError::new("server.tls", "", e.to_string()))?;
    let builder = match clients {
        None => builder.with_no_client_auth(),
        Some(clients) => {
            let roots = super::pem::roots_of(CLIENT_CA_KEY, &clients.path, &clients.seen)?;
            let verifier =
                WebPkiClientVerifier::builder_with_provider(Arc::new(roots), super::provider());
            let verifier = if clients.auth == ClientAuth::Optional {
                verifier.allow_unauthenticated()
            } else {
                verifier
            };
            let verifier = verifier
                .build()
                .map_err(|e| TlsError::new(CLIENT_CA_KEY, &clients.path, e.to_string()))?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    let mut server = builder.with_cert_resolver(resolver.clone());
    server.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(server)
}

/// Checks the client CA bundle every `every` while the listener lives; a changed bundle
/// that loads replaces the configuration new handshakes use, one that does not is logged
/// at warn (once per change) and the bundle in use kept.
async fn watch_client_cas(
    config: Weak<RwLock<Arc<rustls::ServerConfig>>>,
    resolver: Arc<CertResolver>,
    mut clients: ClientCas,
    every: Duration,
) {
    loop {
        tokio::time::sleep(every).await;
        if config.strong_count() == 0 {
            return;
        }
        let path = clients.path.clone();
        let read =
            tokio::task::spawn_blocking(move || super::pem::read(CLIENT_CA_KEY, &path)).await;
        let contents = match read {
            Ok(Ok(contents)) => contents,
            Ok(Err(e)) => {
                tracing::warn!(error = %e, "client CA bundle not reloaded; the one in use is kept");
                continue;
            }
            Err(_) => continue,
        };
        if contents == clients.seen {
            continue;
        }
        let Some(live) = config.upgrade() else {
            return;
        };
        // Remembered even when it does not load: warned about once per change.
        clients.seen = contents;
        match server_config(&resolver, Some(&clients)) {
            Ok(next) => {
                SharedServerConfig(live).replace(next);
                tracing::info!(client_ca_file = %clients.path, "client CA bundle reloaded; new handshakes verify against it");
            }
            Err(e) => {
                tracing::warn!(error = %e, "client CA bundle changed but does not load; the one in use is kept");
            }
        }
    }
}
