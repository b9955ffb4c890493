//! One stored context and who may read and change it.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// A context as the store keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredContext {
    /// Its URI (`urn:uuid:…` when the store minted it).
    pub uri: String,
    /// The contents: one or more XML elements, each standing on its own (it declares the
    /// namespaces it uses), as UTF-8.
    pub contents: String,
    /// 1 when created, one more on every change.
    pub version: u64,
    /// Who may change or remove it.
    pub owner: Owner,
    /// Who may read it.
    pub readers: Readers,
    /// When it expires, in milliseconds since the Unix epoch.
    pub expires_at_ms: u64,
}

impl StoredContext {
    /// The entity tag of this version: `"{version}-{first 16 hex digits of the digest}"`,
    /// so a reader can tell whether what it holds is current.
    pub fn etag(&self) -> String {
        format!("\"{}-{}\"", self.version, &self.digest()[..16])
    }

    /// [`contents_digest`] of the contents.
    pub fn digest(&self) -> String {
        contents_digest(self.contents.as_bytes())
    }

    /// Whether it has expired at `now_ms`.
    pub fn is_expired(&self, now_ms: u64) -> bool {
        now_ms >= self.expires_at_ms
    }
}

/// The SHA-256 of `contents`, as 64 lowercase hexadecimal digits.
pub fn contents_digest(contents: &[u8]) -> String {
    Sha256::digest(contents)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Who created a context, and so may change or remove it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Owner {
    /// Whoever presents the token handed out at creation; the store keeps only its SHA-256.
    Token {
        /// The token's SHA-256, hexadecimal.
        sha256: String,
    },
    /// The authenticated identity (e.g. a `wsse-username` handler's) that created it.
    Identity {
        /// The identity's name.
        name: String,
    },
}

/// Who may read a context.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Readers {
    /// Only its owner (the default).
    #[default]
    Owner,
    /// Anyone who knows its URI.
    Anyone,
}
