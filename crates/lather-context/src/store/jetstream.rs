//! Contexts in a NATS JetStream KV bucket, shared by every lather node that uses the same
//! bucket: key = the context URI in a KV-safe form, value = the context as JSON, history 1.
//!
//! Conditional writes map onto KV revisions: a create is `create` (fails if the key
//! exists), a change is `update` at the revision the version was read at, a removal is a
//! delete expecting that revision — so of two nodes changing one context, one wins and the
//! other sees a conflict. The capacity is checked against the bucket's count of values
//! before a create; nodes creating at the same moment may pass it by a few.

use super::{ContextStore, PutOutcome, StoreError};
use crate::StoredContext;
use async_nats::jetstream::kv;
use bytes::Bytes;
use futures_util::StreamExt;
use futures_util::future::BoxFuture;

/// A JetStream KV bucket holding contexts.
pub struct JetStreamStore {
    kv: kv::Store,
    bucket: String,
}

impl std::fmt::Debug for JetStreamStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JetStreamStore")
            .field("bucket", &self.bucket)
            .finish()
    }
}

use lather_eventing::store::jetstream::key_of;

impl JetStreamStore {
    /// Opens the bucket `bucket` through `client`, creating it (history 1) if absent (as
    /// the event source's shared subscriptions do).
    pub async fn open(
        client: async_nats::Client,
        bucket: &str,
    ) -> Result<JetStreamStore, StoreError> {
        let kv = lather_eventing::store::jetstream::open_bucket(client, bucket, "lather contexts")
            .await
            .map_err(|e| shared(bucket, e))?;
        Ok(JetStreamStore {
            kv,
            bucket: bucket.to_owned(),
        })
    }

    fn fail(&self, e: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> StoreError {
        shared(&self.bucket, e)
    }

    /// The context at `uri` and the revision it was read at.
    async fn entry(&self, uri: &str) -> Result<Option<(StoredContext, u64)>, StoreError> {
        let Some(entry) = self.kv.entry(key_of(uri)).await.map_err(|e| self.fail(e))? else {
            return Ok(None);
        };
        if entry.operation != kv::Operation::Put {
            return Ok(None);
        }
        Ok(Some((
            serde_json::from_slice(&entry.value)?,
            entry.revision,
        )))
    }

    async fn put_checked(
        &self,
        context: &StoredContext,
        expected: Option<u64>,
        capacity: usize,
    ) -> Result<PutOutcome, StoreError> {
        let json = Bytes::from(serde_json::to_vec(context)?);
        let key = key_of(&context.uri);
        let current = self.entry(&context.uri).await?;
        match (current, expected) {
            (None, None) => {
                if self.count_values().await? >= capacity {
                    return Ok(PutOutcome::Full);
                }
                match self.kv.create(&key, json).await {
                    Ok(_) => Ok(PutOutcome::Written),
                    Err(e) if e.kind() == kv::CreateErrorKind::AlreadyExists => {
                        Ok(PutOutcome::Conflict)
                    }
                    Err(e) => Err(self.fail(e)),
                }
            }
            (Some((stored, revision)), Some(version)) if stored.version == version => {
                match self.kv.update(&key, json, revision).await {
                    Ok(_) => Ok(PutOutcome::Written),
                    Err(e) if e.kind() == kv::UpdateErrorKind::WrongLastRevision => {
                        Ok(PutOutcome::Conflict)
                    }
                    Err(e) => Err(self.fail(e)),
                }
            }
            _ => Ok(PutOutcome::Conflict),
        }
    }

    async fn remove_checked(&self, uri: &str, expected: u64) -> Result<bool, StoreError> {
        let Some((stored, revision)) = self.entry(uri).await? else {
            return Ok(false);
        };
        if stored.version != expected {
            return Ok(false);
        }
        match self
            .kv
            .delete_expect_revision(key_of(uri), Some(revision))
            .await
        {
            Ok(()) => Ok(true),
            Err(e) => {
                tracing::debug!(uri, "conditional delete not done: {e}");
                Ok(false)
            }
        }
    }

    /// The keys holding a value now.
    async fn keys(&self) -> Result<Vec<String>, StoreError> {
        let mut keys = self.kv.keys().await.map_err(|e| self.fail(e))?;
        let mut out = Vec::new();
        while let Some(key) = keys.next().await {
            out.push(key.map_err(|e| self.fail(e))?);
        }
        Ok(out)
    }

    async fn count_values(&self) -> Result<usize, StoreError> {
        Ok(self.keys().await?.len())
    }

    async fn remove_expired_now(&self, now_ms: u64) -> Result<usize, StoreError> {
        let mut removed = 0;
        for key in self.keys().await? {
            let Some(entry) = self
                .kv
                .entry(key.as_str())
                .await
                .map_err(|e| self.fail(e))?
            else {
                continue;
            };
            if entry.operation != kv::Operation::Put {
                continue;
            }
            let expired = serde_json::from_slice::<StoredContext>(&entry.value)
                .map_or(true, |c| c.is_expired(now_ms));
            if expired
                && self
                    .kv
                    .delete_expect_revision(key.as_str(), Some(entry.revision))
                    .await
                    .is_ok()
            {
                removed += 1;
            }
        }
        Ok(removed)
    }
}

fn shared(bucket: &str, e: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> StoreError {
    StoreError::Shared {
        bucket: bucket.to_owned(),
        source: e.into(),
    }
}

impl ContextStore for JetStreamStore {
    fn get<'a>(&'a self, uri: &'a str) -> BoxFuture<'a, Result<Option<StoredContext>, StoreError>> {
        Box::pin(async move { Ok(self.entry(uri).await?.map(|(c, _)| c)) })
    }

    fn put<'a>(
        &'a self,
        context: &'a StoredContext,
        expected: Option<u64>,
        capacity: usize,
    ) -> BoxFuture<'a, Result<PutOutcome, StoreError>> {
        Box::pin(self.put_checked(context, expected, capacity))
    }

    fn remove<'a>(
        &'a self,
        uri: &'a str,
        expected: u64,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(self.remove_checked(uri, expected))
    }

    fn remove_expired(&self, now_ms: u64) -> BoxFuture<'_, Result<usize, StoreError>> {
        Box::pin(self.remove_expired_now(now_ms))
    }

    fn count(&self) -> BoxFuture<'_, Result<usize, StoreError>> {
        Box::pin(self.count_values())
    }
}
