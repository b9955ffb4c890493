//! The listener's certificate, swapped when its files change: a resolver every handshake
//! asks, and a task that reads the files every `reload_check_ms` and, when their contents
//! changed, loads the new pair — or logs why it cannot and keeps the one in use.

use super::TlsError;
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use std::sync::{Arc, PoisonError, RwLock, Weak};
use std::time::Duration;

/// The configuration keys of the pair, for errors.
const KEYS: (&str, &str) = ("server.tls.cert_file", "server.tls.key_file");

/// Where the pair is read from.
#[derive(Debug, Clone)]
pub(super) struct PairFiles {
    pub(super) cert: String,
    pub(super) key: String,
}

/// The bytes of the pair's two files, to notice a change.
pub(super) type Contents = (Vec<u8>, Vec<u8>);

impl PairFiles {
    /// Reads both files.
    fn read(&self) -> Result<Contents, TlsError> {
        Ok((
            super::pem::read(KEYS.0, &self.cert)?,
            super::pem::read(KEYS.1, &self.key)?,
        ))
    }

    /// The pair in `contents`, checked.
    fn load(&self, contents: &Contents) -> Result<CertifiedKey, TlsError> {
        super::pem::certified_key(KEYS, &self.cert, &self.key, &contents.0, &contents.1)
    }

    /// Reads and loads the pair now (at start): the pair and what the files held.
    pub(super) fn load_now(&self) -> Result<(CertifiedKey, Contents), TlsError> {
        let contents = self.read()?;
        Ok((self.load(&contents)?, contents))
    }
}

/// The certificate every new handshake is given.
#[derive(Debug)]
pub(crate) struct CertResolver {
    current: RwLock<Arc<CertifiedKey>>,
}

impl CertResolver {
    pub(super) fn new(first: CertifiedKey) -> Arc<Self> {
        Arc::new(CertResolver {
            current: RwLock::new(Arc::new(first)),
        })
    }

    fn replace(&self, next: CertifiedKey) {
        *self.current.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(next);
    }
}

impl ResolvesServerCert for CertResolver {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(
            self.current
                .read()
                .unwrap_or_else(PoisonError::into_inner)
                .clone(),
        )
    }
}

/// Checks `files` every `every` while the resolver lives; a changed pair that loads
/// replaces the one in use, one that does not is logged at warn (once per change).
pub(super) async fn watch(
    resolver: Weak<CertResolver>,
    files: PairFiles,
    mut seen: Contents,
    every: Duration,
) {
    loop {
        tokio::time::sleep(every).await;
        if resolver.strong_count() == 0 {
            return;
        }
        let reading = files.clone();
        let outcome = tokio::task::spawn_blocking(move || {
            let contents = reading.read()?;
            Ok::<_, TlsError>(contents)
        })
        .await;
        let contents = match outcome {
            Ok(Ok(contents)) => contents,
            Ok(Err(e)) => {
                tracing::warn!(error = %e, "TLS certificate not reloaded; the one in use is kept");
                continue;
            }
            Err(_) => continue,
        };
        if contents == seen {
            continue;
        }
        let Some(live) = resolver.upgrade() else {
            return;
        };
        match files.load(&contents) {
            Ok(pair) => {
                live.replace(pair);
                tracing::info!(cert_file = %files.cert, "TLS certificate reloaded; new handshakes use it");
            }
            Err(e) => tracing::warn!(
                error = %e,
                "TLS certificate files changed but do not load; the certificate in use is kept"
            ),
        }
        seen = contents;
    }
}
