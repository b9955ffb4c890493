//! A store known only after start: a shared bucket needs a NATS connection first.

use super::{ContextStore, PutOutcome, StoreError};
use crate::StoredContext;
use futures_util::future::BoxFuture;
use std::sync::{Arc, OnceLock};

/// Stands for a store set once later ([`DeferredStore::set`]); until then every call fails
/// with [`StoreError::NotReady`].
#[derive(Debug, Default)]
pub struct DeferredStore {
    store: OnceLock<Arc<dyn ContextStore>>,
}

impl DeferredStore {
    /// A store not set yet.
    pub fn new() -> DeferredStore {
        DeferredStore::default()
    }

    /// Sets the store; `false` if one was set already (this one is not used).
    pub fn set(&self, store: Arc<dyn ContextStore>) -> bool {
        self.store.set(store).is_ok()
    }

    fn store(&self) -> Result<&Arc<dyn ContextStore>, StoreError> {
        self.store.get().ok_or(StoreError::NotReady)
    }
}

impl ContextStore for DeferredStore {
    fn get<'a>(&'a self, uri: &'a str) -> BoxFuture<'a, Result<Option<StoredContext>, StoreError>> {
        match self.store() {
            Ok(store) => store.get(uri),
            Err(e) => Box::pin(async move { Err(e) }),
        }
    }

    fn put<'a>(
        &'a self,
        context: &'a StoredContext,
        expected: Option<u64>,
        capacity: usize,
    ) -> BoxFuture<'a, Result<PutOutcome, StoreError>> {
        match self.store() {
            Ok(store) => store.put(context, expected, capacity),
            Err(e) => Box::pin(async move { Err(e) }),
        }
    }

    fn remove<'a>(
        &'a self,
        uri: &'a str,
        expected: u64,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        match self.store() {
            Ok(store) => store.remove(uri, expected),
            Err(e) => Box::pin(async move { Err(e) }),
        }
    }

    fn remove_expired(&self, now_ms: u64) -> BoxFuture<'_, Result<usize, StoreError>> {
        match self.store() {
            Ok(store) => store.remove_expired(now_ms),
            Err(e) => Box::pin(async move { Err(e) }),
        }
    }

    fn count(&self) -> BoxFuture<'_, Result<usize, StoreError>> {
        match self.store() {
            Ok(store) => store.count(),
            Err(e) => Box::pin(async move { Err(e) }),
        }
    }
}
