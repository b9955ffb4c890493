//! Where subscriptions are kept across restarts, behind one small trait
//! ([`SubscriptionStore`]) with three homes: memory only ([`MemoryStore`]), a redb file
//! ([`RedbStore`]) and a NATS JetStream KV bucket shared by several nodes
//! ([`JetStreamStore`], which also follows the other nodes' changes).
//!
//! The source keeps every Subscribe, Renew, Unsubscribe and end through the trait; a
//! failure refuses the request (see [`StoreError`]).

mod error;
pub mod jetstream;
mod memory;
mod redb;

pub use error::StoreError;
pub use jetstream::JetStreamStore;
pub use memory::MemoryStore;
pub use redb::RedbStore;

use crate::Subscription;
use futures_util::future::BoxFuture;

/// A home for subscriptions: what the event source needs to keep them across restarts
/// (and, for a shared store, across nodes).
///
/// Methods return boxed futures so the source can hold any store as
/// `Arc<dyn SubscriptionStore>`.
pub trait SubscriptionStore: Send + Sync + std::fmt::Debug {
    /// Every stored subscription (unreadable ones are skipped with a warning).
    fn load(&self) -> BoxFuture<'_, Result<Vec<Subscription>, StoreError>>;

    /// Writes (or replaces) `sub`.
    fn put<'a>(&'a self, sub: &'a Subscription) -> BoxFuture<'a, Result<(), StoreError>>;

    /// Removes the subscription `id` whatever its state (an Unsubscribe); nothing if absent.
    fn remove<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<(), StoreError>>;

    /// Removes subscriptions past their expiry. A shared store removes each only if no
    /// other node changed it meanwhile (every node sweeps; the first one wins).
    fn remove_expired(&self, ids: Vec<String>) -> BoxFuture<'_, Result<(), StoreError>> {
        Box::pin(async move {
            for id in &ids {
                self.remove(id).await?;
            }
            Ok(())
        })
    }

    /// Removes `id`, which the source ends on its own (SourceCancelling, DeliveryFailure,
    /// shut down); returns whether this node is the one to send its SubscriptionEnd. A
    /// local store always is (a failure is logged); a shared one only if its conditional
    /// delete wins, so exactly one node sends it.
    fn remove_ended<'a>(&'a self, id: &'a str) -> BoxFuture<'a, bool> {
        Box::pin(async move {
            if let Err(e) = self.remove(id).await {
                tracing::warn!(subscription = id, "could not remove it from the store: {e}");
            }
            true
        })
    }

    /// Whether subscriptions may be changed now; a shared store that lost its server (or
    /// has not resynchronised since) says why not.
    fn check_available(&self) -> Result<(), StoreError> {
        Ok(())
    }
}
