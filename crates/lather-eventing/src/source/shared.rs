//! Several nodes over NATS: an event source shares its subscriptions through a JetStream
//! KV bucket and takes events from a subject in a queue group.

use super::EventSource;
use crate::error::EventingError;
use crate::store::JetStreamStore;
use crate::store::jetstream::sync;
use std::sync::Arc;

/// What sharing over NATS needs: the bucket, and the subject and queue group events come
/// from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharedSettings {
    /// The JetStream KV bucket holding the subscriptions (created with history 1 if absent).
    pub bucket: String,
    /// The subject events are taken from.
    pub event_subject: String,
    /// The queue group all nodes of the service take events in.
    pub queue_group: String,
}

impl EventSource {
    /// Shares this source's subscriptions with every node using the same bucket: loads the
    /// bucket's subscriptions (starting their delivery), keeps following its changes, and
    /// from then on keeps every Subscribe, Renew, Unsubscribe and end there. Also takes
    /// events from `settings.event_subject` in `settings.queue_group`. Use on a source
    /// opened without a `store`. Fails (naming the bucket) if JetStream KV is not
    /// available on the server, or if the source shares already.
    pub async fn share_over_nats(
        &self,
        client: async_nats::Client,
        settings: &SharedSettings,
    ) -> Result<(), EventingError> {
        if self.inner.shared.get().is_some() {
            return Err(EventingError::AlreadyShared);
        }
        let kv = JetStreamStore::open(client.clone(), &settings.bucket).await?;
        let (snapshot, last) = kv.snapshot().await?;
        sync::reconcile(&self.inner, &kv, snapshot);
        let kv = Arc::new(kv);
        self.inner
            .shared
            .set(kv.clone())
            .map_err(|_| EventingError::AlreadyShared)?;
        tokio::spawn(sync::follow(Arc::downgrade(&self.inner), kv, last));
        let subscriber = client
            .queue_subscribe(settings.event_subject.clone(), settings.queue_group.clone())
            .await
            .map_err(|e| EventingError::subject(&settings.event_subject, e))?;
        // The server has the queue subscription once the flush returns.
        client
            .flush()
            .await
            .map_err(|e| EventingError::subject(&settings.event_subject, e))?;
        tokio::spawn(super::nats_events::take(
            Arc::downgrade(&self.inner),
            client,
            subscriber,
        ));
        Ok(())
    }
}
