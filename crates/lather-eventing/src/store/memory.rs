//! Subscriptions kept in memory only: the source holds them, nothing survives a restart.

use super::{StoreError, SubscriptionStore};
use crate::Subscription;
use futures_util::future::BoxFuture;

/// A store that keeps nothing: the event source's own table is the only copy.
#[derive(Debug, Clone, Copy, Default)]
pub struct MemoryStore;

impl SubscriptionStore for MemoryStore {
    fn load(&self) -> BoxFuture<'_, Result<Vec<Subscription>, StoreError>> {
        Box::pin(async { Ok(Vec::new()) })
    }

    fn put<'a>(&'a self, _sub: &'a Subscription) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async { Ok(()) })
    }

    fn remove<'a>(&'a self, _id: &'a str) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async { Ok(()) })
    }
}
