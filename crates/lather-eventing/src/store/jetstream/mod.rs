//! Subscriptions in a NATS JetStream KV bucket shared by every node of an event source:
//! key = the subscription id in a KV-safe form, value = the subscription as JSON, history 1.
//!
//! Each node remembers the revision it last saw per id, so that it applies only newer
//! changes and so that deletes can be conditional on that revision (compare-and-set): of
//! several nodes ending the same subscription, exactly one succeeds.

pub(crate) mod sync;

use super::{StoreError, SubscriptionStore};
use crate::Subscription;
use async_nats::connection::State;
use async_nats::jetstream::{self, kv};
use bytes::Bytes;
use futures_util::StreamExt;
use futures_util::future::BoxFuture;
use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// The shared bucket, this node's view of its revisions and whether it is in sync.
///
/// Opened by [`crate::EventSource::share_over_nats`], which also follows the bucket.
pub struct JetStreamStore {
    kv: kv::Store,
    client: async_nats::Client,
    bucket: String,
    /// Id → the newest revision seen for it (a put or a delete).
    revisions: Mutex<HashMap<String, u64>>,
    /// Whether this node is in sync with the bucket (false from a lost connection until
    /// the resync after it).
    in_sync: AtomicBool,
}

impl std::fmt::Debug for JetStreamStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JetStreamStore")
            .field("bucket", &self.bucket)
            .field("in_sync", &self.in_sync.load(Ordering::Relaxed))
            .finish()
    }
}

/// The KV key of `id` (a subscription id, or any other record's): ASCII letters, digits,
/// `-` and `_` are kept, every other byte becomes `=XX` (upper-case hex), so `urn:uuid:…`
/// → `urn=3Auuid=3A…`. Other lather stores that keep records in a bucket use it too.
pub fn key_of(id: &str) -> String {
    let mut key = String::with_capacity(id.len() + 8);
    for b in id.bytes() {
        if b.is_ascii_alphanumeric() || b == b'-' || b == b'_' {
            key.push(char::from(b));
        } else {
            key.push_str(&format!("={b:02X}"));
        }
    }
    key
}

/// The id a key stands for (the inverse of [`key_of`]); `None` if it is not one.
pub(crate) fn id_of(key: &str) -> Option<String> {
    let mut out = Vec::with_capacity(key.len());
    let mut bytes = key.bytes();
    while let Some(b) = bytes.next() {
        if b == b'=' {
            let hex = [bytes.next()?, bytes.next()?];
            let hex = std::str::from_utf8(&hex).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
        } else {
            out.push(b);
        }
    }
    String::from_utf8(out).ok()
}

/// Opens the JetStream KV bucket `bucket` through `client`, creating it with history 1 if
/// absent (`description` goes on its stream). Other lather stores that keep records in a
/// shared bucket use it too.
///
/// The bucket's stream is created here with the KV conventions (`KV_{bucket}` over
/// `$KV.{bucket}.>`, one message per subject, rollups, direct gets) rather than by
/// `create_key_value`, whose account query needs nats-server 2.10; this works with 2.9.
pub async fn open_bucket(
    client: async_nats::Client,
    bucket: &str,
    description: &str,
) -> Result<kv::Store, Box<dyn std::error::Error + Send + Sync>> {
    open_expiring_bucket(client, bucket, description, Duration::ZERO).await
}

/// [`open_bucket`], its entries dropped `max_age` after their last write when the bucket
/// is created here (`Duration::ZERO`: kept until deleted).
pub async fn open_expiring_bucket(
    client: async_nats::Client,
    bucket: &str,
    description: &str,
    max_age: Duration,
) -> Result<kv::Store, Box<dyn std::error::Error + Send + Sync>> {
    let js = jetstream::new(client);
    if let Ok(kv) = js.get_key_value(bucket).await {
        return Ok(kv);
    }
    let created = js
        .create_stream(jetstream::stream::Config {
            name: format!("KV_{bucket}"),
            description: Some(description.to_owned()),
            subjects: vec![format!("$KV.{bucket}.>")],
            max_messages_per_subject: 1,
            allow_rollup: true,
            deny_delete: true,
            allow_direct: true,
            max_age,
            discard: jetstream::stream::DiscardPolicy::New,
            num_replicas: 1,
            ..Default::default()
        })
        .await;
    // Another node may have created it meanwhile: open it either way.
    match js.get_key_value(bucket).await {
        Ok(kv) => Ok(kv),
        Err(e) => Err(match created {
            Err(c) => c.into(),
            Ok(_) => e.into(),
        }),
    }
}

impl JetStreamStore {
    /// Opens the bucket `bucket` (creating it with history 1 if absent) through `client`.
    pub(crate) async fn open(
        client: async_nats::Client,
        bucket: &str,
    ) -> Result<JetStreamStore, StoreError> {
        let kv = open_bucket(client.clone(), bucket, "lather event source subscriptions")
            .await
            .map_err(|e| StoreError::shared(bucket, e))?;
        Ok(JetStreamStore {
            kv,
            client,
            bucket: bucket.to_owned(),
            revisions: Mutex::new(HashMap::new()),
            in_sync: AtomicBool::new(false),
        })
    }

    /// The bucket's name.
    pub(crate) fn bucket(&self) -> &str {
        &self.bucket
    }

    /// Whether the connection to NATS is up now.
    pub(crate) fn connected(&self) -> bool {
        self.client.connection_state() == State::Connected
    }

    /// Whether subscriptions may be changed now: connected and in sync.
    pub(crate) fn available(&self) -> bool {
        self.in_sync.load(Ordering::Acquire) && self.connected()
    }

    /// Marks this node in sync with the bucket (after a snapshot) or not (connection lost).
    pub(crate) fn set_in_sync(&self, in_sync: bool) {
        self.in_sync.store(in_sync, Ordering::Release);
    }

    fn revisions(&self) -> std::sync::MutexGuard<'_, HashMap<String, u64>> {
        self.revisions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Records `revision` for `id` if it is newer than the one known; returns whether it
    /// was (i.e. whether the change it stands for is still to be applied).
    pub(crate) fn newer(&self, id: &str, revision: u64) -> bool {
        let mut known = self.revisions();
        match known.get(id) {
            Some(&seen) if seen >= revision => false,
            _ => {
                known.insert(id.to_owned(), revision);
                true
            }
        }
    }

    /// Replaces the known revisions by those of a snapshot.
    pub(crate) fn reset_revisions(&self, revisions: HashMap<String, u64>) {
        *self.revisions() = revisions;
    }

    /// Writes (or replaces) `sub`; returns its new revision.
    pub(crate) async fn put_revision(&self, sub: &Subscription) -> Result<u64, StoreError> {
        let json = serde_json::to_vec(sub)?;
        let revision = self
            .kv
            .put(key_of(&sub.id), Bytes::from(json))
            .await
            .map_err(|e| StoreError::shared(&self.bucket, e))?;
        self.newer(&sub.id, revision);
        Ok(revision)
    }

    /// Deletes `id` whatever its revision (an Unsubscribe).
    pub(crate) async fn remove_any(&self, id: &str) -> Result<(), StoreError> {
        self.kv
            .delete(key_of(id))
            .await
            .map_err(|e| StoreError::shared(&self.bucket, e))
    }

    /// Deletes `id` only if its revision is still the one this node knows; returns whether
    /// this call deleted it. Of several nodes ending the same subscription, one gets `true`.
    pub(crate) async fn remove_if_unchanged(&self, id: &str) -> bool {
        let Some(revision) = self.revisions().get(id).copied() else {
            return false;
        };
        match self
            .kv
            .delete_expect_revision(key_of(id), Some(revision))
            .await
        {
            Ok(()) => true,
            Err(e) => {
                tracing::debug!(subscription = id, "conditional delete not done: {e}");
                false
            }
        }
    }

    /// Every subscription in the bucket with its revision, and the stream's last sequence
    /// before the listing (a watch from the one after it misses nothing).
    pub(crate) async fn snapshot(&self) -> Result<(Vec<(Subscription, u64)>, u64), StoreError> {
        let fail =
            |e: Box<dyn std::error::Error + Send + Sync>| StoreError::shared(&self.bucket, e);
        let mut stream = self.kv.stream.clone();
        let last = stream
            .info()
            .await
            .map_err(|e| fail(e.into()))?
            .state
            .last_sequence;
        let mut keys = self.kv.keys().await.map_err(|e| fail(e.into()))?;
        let mut out = Vec::new();
        while let Some(key) = keys.next().await {
            let key = key.map_err(|e| fail(e.into()))?;
            let Some(entry) = self
                .kv
                .entry(key.as_str())
                .await
                .map_err(|e| fail(e.into()))?
            else {
                continue;
            };
            if entry.operation != kv::Operation::Put {
                continue;
            }
            match serde_json::from_slice::<Subscription>(&entry.value) {
                Ok(sub) if id_of(&key).as_deref() == Some(sub.id.as_str()) => {
                    out.push((sub, entry.revision));
                }
                Ok(_) => tracing::warn!(key, "subscription stored under another key: skipped"),
                Err(e) => tracing::warn!(key, "unreadable subscription: {e}"),
            }
        }
        Ok((out, last))
    }

    /// Every change to the bucket from stream sequence `from` on.
    pub(crate) async fn watch_from(&self, from: u64) -> Result<kv::Watch, StoreError> {
        self.kv
            .watch_all_from_revision(from.max(1))
            .await
            .map_err(|e| StoreError::shared(&self.bucket, e))
    }
}

impl SubscriptionStore for JetStreamStore {
    fn load(&self) -> BoxFuture<'_, Result<Vec<Subscription>, StoreError>> {
        Box::pin(async move {
            let (snapshot, _) = self.snapshot().await?;
            Ok(snapshot.into_iter().map(|(sub, _)| sub).collect())
        })
    }

    fn put<'a>(&'a self, sub: &'a Subscription) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move { self.put_revision(sub).await.map(|_| ()) })
    }

    fn remove<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(self.remove_any(id))
    }

    fn remove_expired(&self, ids: Vec<String>) -> BoxFuture<'_, Result<(), StoreError>> {
        Box::pin(async move {
            // Every node sweeps; whichever deletes first wins, the rest find the revision
            // changed.
            for id in ids {
                self.remove_if_unchanged(&id).await;
            }
            Ok(())
        })
    }

    fn remove_ended<'a>(&'a self, id: &'a str) -> BoxFuture<'a, bool> {
        Box::pin(self.remove_if_unchanged(id))
    }

    fn check_available(&self) -> Result<(), StoreError> {
        if self.available() {
            Ok(())
        } else {
            Err(StoreError::Unavailable {
                bucket: self.bucket.clone(),
            })
        }
    }
}

/// The test harness that starts a real nats-server.
#[cfg(test)]
use lather_test_util::nats;

#[cfg(test)]
mod tests {
    use super::*;

    use super::nats;

    fn sample() -> Subscription {
        serde_json::from_str(
            r#"{"id":"urn:uuid:00000000-0000-4000-8000-000000000001","version":"Submission04Wsa10",
            "soap12":true,"notify_to":{"address":"http://127.0.0.1:9/sink","params":[]},
            "end_to":null,"manager":"http://127.0.0.1:8/events","expires_ms":4102444800000,
            "topics":[]}"#,
        )
        .unwrap()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn of_two_nodes_ending_a_subscription_exactly_one_deletes_it() {
        let server = nats::NatsServer::start_jetstream("kv-cas");
        let connect = || async_nats::connect(server.url());
        let a = JetStreamStore::open(connect().await.unwrap(), "t_cas")
            .await
            .unwrap();
        let b = JetStreamStore::open(connect().await.unwrap(), "t_cas")
            .await
            .unwrap();
        let sub = sample();

        let revision = a.put_revision(&sub).await.unwrap();
        let (snapshot, last) = b.snapshot().await.unwrap();
        assert_eq!(snapshot, vec![(sub.clone(), revision)]);
        assert_eq!(last, revision);
        b.reset_revisions(HashMap::from([(sub.id.clone(), revision)]));
        let (x, y) = tokio::join!(
            a.remove_if_unchanged(&sub.id),
            b.remove_if_unchanged(&sub.id)
        );
        assert!(x ^ y, "a deleted: {x}, b deleted: {y}");
        assert!(b.snapshot().await.unwrap().0.is_empty());

        // A node that missed a renewal does not delete the renewed subscription.
        let revision = a.put_revision(&sub).await.unwrap();
        b.reset_revisions(HashMap::from([(sub.id.clone(), revision)]));
        let renewed = a.put_revision(&sub).await.unwrap();
        assert!(!b.remove_if_unchanged(&sub.id).await);
        assert_eq!(b.snapshot().await.unwrap().0, vec![(sub.clone(), renewed)]);
        // An Unsubscribe deletes whatever the revision.
        b.remove_any(&sub.id).await.unwrap();
        assert!(a.snapshot().await.unwrap().0.is_empty());
    }

    #[test]
    fn keys_are_kv_safe_and_reversible() {
        let id = "urn:uuid:6d5a6e4a-0000-4000-8000-000000000001";
        let key = key_of(id);
        assert_eq!(key, "urn=3Auuid=3A6d5a6e4a-0000-4000-8000-000000000001");
        assert_eq!(id_of(&key).as_deref(), Some(id));
        let odd = "a.b/c d=é*>";
        let key = key_of(odd);
        assert!(
            key.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-_=".contains(&b)),
            "{key}"
        );
        assert_eq!(id_of(&key).as_deref(), Some(odd));
        assert_eq!(id_of("bad=4"), None);
        assert_eq!(id_of("bad=ZZ"), None);
    }
}
