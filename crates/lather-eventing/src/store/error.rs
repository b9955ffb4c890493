//! Why a subscription store failed.

use std::path::PathBuf;

/// A failure of a [`crate::store::SubscriptionStore`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The redb file could not be opened, read or written.
    #[error("subscription store {}: {source}", path.display())]
    File {
        /// The file.
        path: PathBuf,
        /// What redb said.
        #[source]
        source: Box<redb::Error>,
    },
    /// A subscription could not be written as JSON.
    #[error("subscription store: subscription not encodable: {0}")]
    Encode(#[from] serde_json::Error),
    /// The blocking task doing the store's work failed.
    #[error("subscription store task: {0}")]
    Task(#[from] tokio::task::JoinError),
    /// The shared JetStream KV bucket refused or failed an operation.
    #[error("NATS JetStream KV bucket {bucket}: {source}")]
    Shared {
        /// The bucket.
        bucket: String,
        /// What the NATS client said.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A store of another crate failed (its own error).
    #[error("subscription store: {0}")]
    Backend(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// The subscriptions are shared and NATS cannot be reached now (or this node has not
    /// resynchronised since): changes are refused until it is back.
    #[error(
        "the subscriptions live in NATS JetStream KV (bucket {bucket}) and NATS cannot be reached now; try again later"
    )]
    Unavailable {
        /// The bucket.
        bucket: String,
    },
}

impl StoreError {
    /// Whether the failure is the shared store's (the source answers it with the
    /// `SubscriptionsUnavailable` fault rather than an internal one).
    pub fn is_shared(&self) -> bool {
        matches!(
            self,
            StoreError::Shared { .. } | StoreError::Unavailable { .. }
        )
    }

    /// A redb failure on `path`.
    pub(crate) fn file(path: &std::path::Path, e: impl Into<redb::Error>) -> StoreError {
        StoreError::File {
            path: path.to_owned(),
            source: Box::new(e.into()),
        }
    }

    /// A JetStream failure on `bucket`.
    pub(crate) fn shared(
        bucket: &str,
        e: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> StoreError {
        StoreError::Shared {
            bucket: bucket.to_owned(),
            source: e.into(),
        }
    }
}
