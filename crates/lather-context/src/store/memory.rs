//! Contexts in memory only: gone when the process ends.

use super::{ContextStore, PutOutcome, StoreError};
use crate::StoredContext;
use futures_util::future::BoxFuture;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

/// Contexts in a map in memory.
#[derive(Debug, Clone, Default)]
pub struct MemoryStore {
    map: Arc<Mutex<HashMap<String, StoredContext>>>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> MemoryStore {
        MemoryStore::default()
    }

    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<String, StoredContext>> {
        self.map.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl ContextStore for MemoryStore {
    fn get<'a>(&'a self, uri: &'a str) -> BoxFuture<'a, Result<Option<StoredContext>, StoreError>> {
        let found = self.map().get(uri).cloned();
        Box::pin(async move { Ok(found) })
    }

    fn put<'a>(
        &'a self,
        context: &'a StoredContext,
        expected: Option<u64>,
        capacity: usize,
    ) -> BoxFuture<'a, Result<PutOutcome, StoreError>> {
        let outcome = {
            let mut map = self.map();
            let stored = map.get(&context.uri).map(|c| c.version);
            if stored != expected {
                PutOutcome::Conflict
            } else if stored.is_none() && map.len() >= capacity {
                PutOutcome::Full
            } else {
                map.insert(context.uri.clone(), context.clone());
                PutOutcome::Written
            }
        };
        Box::pin(async move { Ok(outcome) })
    }

    fn remove<'a>(
        &'a self,
        uri: &'a str,
        expected: u64,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        let removed = {
            let mut map = self.map();
            let matches = map.get(uri).is_some_and(|c| c.version == expected);
            matches && map.remove(uri).is_some()
        };
        Box::pin(async move { Ok(removed) })
    }

    fn remove_expired(&self, now_ms: u64) -> BoxFuture<'_, Result<usize, StoreError>> {
        let removed = {
            let mut map = self.map();
            let before = map.len();
            map.retain(|_, c| !c.is_expired(now_ms));
            before - map.len()
        };
        Box::pin(async move { Ok(removed) })
    }

    fn count(&self) -> BoxFuture<'_, Result<usize, StoreError>> {
        let len = self.map().len();
        Box::pin(async move { Ok(len) })
    }
}
