//! Why a TLS file (certificate, key, CA bundle) could not be used.

/// A certificate, key or CA file that cannot be used, named by the key that names it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{key} {path:?}: {reason}")]
pub struct TlsError {
    key: String,
    path: String,
    reason: String,
}

impl TlsError {
    pub(crate) fn new(key: &str, path: &str, reason: impl Into<String>) -> Self {
        TlsError {
            key: key.to_owned(),
            path: path.to_owned(),
            reason: reason.into(),
        }
    }

    /// The configuration key naming the file, e.g. `server.tls.cert_file`.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The file as configured.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// What is wrong with it.
    pub fn reason(&self) -> &str {
        &self.reason
    }
}
