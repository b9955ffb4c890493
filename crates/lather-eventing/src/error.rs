//! What can fail when an event source is opened or shared.

use crate::store::StoreError;

/// A failure of [`crate::EventSource`] outside a request (a request gets its fault).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EventingError {
    /// The subscription store could not be opened, read or written.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// [`crate::EventSource::share_over_nats`] was called on a source that shares already.
    #[error("the event source shares over NATS already")]
    AlreadyShared,
    /// The NATS subject events are taken from could not be subscribed to.
    #[error("subject {subject}: {source}")]
    Subject {
        /// The subject.
        subject: String,
        /// What the NATS client said.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

impl EventingError {
    /// A failure to subscribe to `subject`.
    pub(crate) fn subject(
        subject: &str,
        e: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> EventingError {
        EventingError::Subject {
            subject: subject.to_owned(),
            source: e.into(),
        }
    }
}
