//! Why a context store failed.

use std::path::{Path, PathBuf};

/// A failure of a [`crate::ContextStore`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The redb file could not be opened, read or written.
    #[error("context store {}: {source}", path.display())]
    File {
        /// The file.
        path: PathBuf,
        /// What redb said.
        #[source]
        source: Box<redb::Error>,
    },
    /// A stored context could not be encoded or decoded.
    #[error("context store: a context is not encodable or readable: {0}")]
    Encode(#[from] serde_json::Error),
    /// The blocking task doing the store's work failed.
    #[error("context store task: {0}")]
    Task(#[from] tokio::task::JoinError),
    /// The shared JetStream KV bucket refused or failed an operation, or NATS cannot be
    /// reached.
    #[error("NATS JetStream KV bucket {bucket}: {source}")]
    Shared {
        /// The bucket.
        bucket: String,
        /// What the NATS client said.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The store is not connected yet (a shared store before the server finished starting).
    #[error("context store: not ready yet")]
    NotReady,
    /// A store of another crate failed (its own error).
    #[error("context store: {0}")]
    Backend(#[source] Box<dyn std::error::Error + Send + Sync>),
}

impl StoreError {
    /// A redb failure on `path`.
    pub(crate) fn file(path: &Path, e: impl Into<redb::Error>) -> StoreError {
        StoreError::File {
            path: path.to_owned(),
            source: Box::new(e.into()),
        }
    }
}
