//! Where contexts live, behind one small trait ([`ContextStore`]) with three homes here:
//! memory only ([`MemoryStore`]), a redb file ([`RedbStore`]) and a NATS JetStream KV
//! bucket shared by several nodes ([`JetStreamStore`]).
//!
//! Every change is conditional on the version the caller read, so two writers never
//! silently overwrite each other, and a new context is refused when the store is full —
//! both decided inside the store, atomically.

mod deferred;
mod error;
mod jetstream;
mod memory;
mod redb;

pub use self::redb::RedbStore;
pub use deferred::DeferredStore;
pub use error::StoreError;
pub use jetstream::JetStreamStore;
pub use memory::MemoryStore;

use crate::StoredContext;
use futures_util::future::BoxFuture;

/// What a conditional write did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PutOutcome {
    /// Written.
    Written,
    /// The stored version is not the one expected (someone changed it, or it is absent /
    /// present against the expectation): nothing written.
    Conflict,
    /// A new context, and the store already holds its most: nothing written.
    Full,
}

/// A home for contexts.
///
/// Methods return boxed futures so a service can hold any store as `Arc<dyn ContextStore>`.
/// Expired contexts may still be returned: the caller judges expiry (it knows the time).
pub trait ContextStore: Send + Sync + std::fmt::Debug {
    /// The context `uri`, if stored.
    fn get<'a>(&'a self, uri: &'a str) -> BoxFuture<'a, Result<Option<StoredContext>, StoreError>>;

    /// Writes `context` if the stored version of its URI is `expected` (`None`: no context
    /// of that URI is stored, and then only if fewer than `capacity` are).
    fn put<'a>(
        &'a self,
        context: &'a StoredContext,
        expected: Option<u64>,
        capacity: usize,
    ) -> BoxFuture<'a, Result<PutOutcome, StoreError>>;

    /// Removes `uri` if its stored version is `expected`; whether it did.
    fn remove<'a>(&'a self, uri: &'a str, expected: u64)
    -> BoxFuture<'a, Result<bool, StoreError>>;

    /// Removes every context expired at `now_ms`; how many.
    fn remove_expired(&self, now_ms: u64) -> BoxFuture<'_, Result<usize, StoreError>>;

    /// How many contexts are stored.
    fn count(&self) -> BoxFuture<'_, Result<usize, StoreError>>;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Owner, Readers};
    use lather_test_util::ScratchDir;
    use std::sync::Arc;

    fn context(uri: &str, version: u64, expires_at_ms: u64) -> StoredContext {
        StoredContext {
            uri: uri.to_owned(),
            contents: format!("<x:v xmlns:x=\"urn:x\">{version}</x:v>"),
            version,
            owner: Owner::Identity {
                name: "alice".into(),
            },
            readers: Readers::Owner,
            expires_at_ms,
        }
    }

    /// The contract every store keeps.
    async fn keeps_the_contract(store: Arc<dyn ContextStore>) {
        let a1 = context("urn:a", 1, 10);
        assert_eq!(store.put(&a1, None, 2).await.unwrap(), PutOutcome::Written);
        assert_eq!(store.get("urn:a").await.unwrap(), Some(a1.clone()));
        assert_eq!(
            store.put(&a1, None, 2).await.unwrap(),
            PutOutcome::Conflict,
            "present, but absence expected"
        );
        let a2 = context("urn:a", 2, 10);
        assert_eq!(
            store.put(&a2, Some(7), 2).await.unwrap(),
            PutOutcome::Conflict
        );
        assert_eq!(
            store.put(&a2, Some(1), 2).await.unwrap(),
            PutOutcome::Written
        );
        assert_eq!(store.get("urn:a").await.unwrap().unwrap().version, 2);
        assert_eq!(
            store.put(&context("urn:b", 1, 20), None, 2).await.unwrap(),
            PutOutcome::Written
        );
        assert_eq!(
            store.put(&context("urn:c", 1, 20), None, 2).await.unwrap(),
            PutOutcome::Full
        );
        // A change of a stored one is no new entry: not refused when full.
        assert_eq!(
            store
                .put(&context("urn:b", 2, 20), Some(1), 2)
                .await
                .unwrap(),
            PutOutcome::Written
        );
        assert_eq!(store.count().await.unwrap(), 2);
        assert!(!store.remove("urn:b", 1).await.unwrap(), "stale version");
        assert_eq!(
            store.remove_expired(15).await.unwrap(),
            1,
            "urn:a expired at 10"
        );
        assert_eq!(store.get("urn:a").await.unwrap(), None);
        assert!(store.remove("urn:b", 2).await.unwrap());
        assert_eq!(store.count().await.unwrap(), 0);
    }

    #[tokio::test]
    async fn the_memory_store_keeps_the_contract() {
        keeps_the_contract(Arc::new(MemoryStore::new())).await;
    }

    #[tokio::test]
    async fn a_jetstream_bucket_keeps_the_contract_and_is_shared_by_nodes() {
        let nats = lather_test_util::nats::NatsServer::start_jetstream("context-store");
        let client = async_nats::connect(nats.url()).await.unwrap();
        keeps_the_contract(Arc::new(
            JetStreamStore::open(client.clone(), "lather_ctx_contract")
                .await
                .unwrap(),
        ))
        .await;
        // Two nodes on one bucket: what one writes the other reads, and of two changes
        // from the same version one wins.
        let a = JetStreamStore::open(client.clone(), "lather_ctx_nodes")
            .await
            .unwrap();
        let other = async_nats::connect(nats.url()).await.unwrap();
        let b = JetStreamStore::open(other, "lather_ctx_nodes")
            .await
            .unwrap();
        let c1 = context("urn:shared", 1, u64::MAX);
        assert_eq!(a.put(&c1, None, 10).await.unwrap(), PutOutcome::Written);
        assert_eq!(b.get("urn:shared").await.unwrap(), Some(c1));
        let from_a = context("urn:shared", 2, u64::MAX);
        let from_b = context("urn:shared", 2, u64::MAX - 1);
        assert_eq!(
            a.put(&from_a, Some(1), 10).await.unwrap(),
            PutOutcome::Written
        );
        assert_eq!(
            b.put(&from_b, Some(1), 10).await.unwrap(),
            PutOutcome::Conflict
        );
        assert_eq!(b.get("urn:shared").await.unwrap(), Some(from_a));
    }

    #[tokio::test]
    async fn the_redb_store_keeps_the_contract_and_its_contents() {
        let dir = ScratchDir::new("ctx-store");
        let path = dir.join("c.redb");
        keeps_the_contract(Arc::new(RedbStore::open(&path).unwrap())).await;
        let store = RedbStore::open(&path).unwrap();
        store
            .put(&context("urn:kept", 1, u64::MAX), None, 10)
            .await
            .unwrap();
        drop(store);
        let reopened = RedbStore::open(&path).unwrap();
        assert_eq!(reopened.get("urn:kept").await.unwrap().unwrap().version, 1);
    }
}
