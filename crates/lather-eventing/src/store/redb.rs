//! Subscriptions' durable home on one node: one redb file, id → the subscription as JSON.
//!
//! The `*_blocking` methods block; through [`SubscriptionStore`] the work runs on tokio's
//! blocking threads.

use super::{StoreError, SubscriptionStore};
use crate::Subscription;
use futures_util::future::BoxFuture;
use redb::{Database, ReadableDatabase, ReadableTable, TableDefinition};
use std::path::{Path, PathBuf};
use std::sync::Arc;

const SUBSCRIPTIONS: TableDefinition<'static, &str, &[u8]> = TableDefinition::new("subscriptions");

/// A redb file holding the subscriptions.
#[derive(Debug, Clone)]
pub struct RedbStore {
    db: Arc<Database>,
    path: PathBuf,
}

impl RedbStore {
    /// Opens (creating if absent) the store at `path`. Blocks.
    pub fn open(path: &Path) -> Result<RedbStore, StoreError> {
        let fail = |e: redb::Error| StoreError::file(path, e);
        let db = Database::create(path).map_err(|e| fail(e.into()))?;
        let tx = db.begin_write().map_err(|e| fail(e.into()))?;
        tx.open_table(SUBSCRIPTIONS).map_err(|e| fail(e.into()))?;
        tx.commit().map_err(|e| fail(e.into()))?;
        Ok(RedbStore {
            db: Arc::new(db),
            path: path.to_owned(),
        })
    }

    fn fail(&self, e: impl Into<redb::Error>) -> StoreError {
        StoreError::file(&self.path, e)
    }

    /// Every stored subscription (unreadable rows are skipped with a warning). Blocks.
    pub fn load_blocking(&self) -> Result<Vec<Subscription>, StoreError> {
        let tx = self.db.begin_read().map_err(|e| self.fail(e))?;
        let table = tx.open_table(SUBSCRIPTIONS).map_err(|e| self.fail(e))?;
        let mut out = Vec::new();
        for row in table.iter().map_err(|e| self.fail(e))? {
            let (key, value) = row.map_err(|e| self.fail(e))?;
            match serde_json::from_slice::<Subscription>(value.value()) {
                Ok(sub) => out.push(sub),
                Err(e) => tracing::warn!(id = key.value(), "unreadable subscription: {e}"),
            }
        }
        Ok(out)
    }

    /// Writes (or replaces) `sub`. Blocks.
    pub fn put_blocking(&self, sub: &Subscription) -> Result<(), StoreError> {
        let json = serde_json::to_vec(sub)?;
        let tx = self.db.begin_write().map_err(|e| self.fail(e))?;
        {
            let mut table = tx.open_table(SUBSCRIPTIONS).map_err(|e| self.fail(e))?;
            table
                .insert(sub.id.as_str(), json.as_slice())
                .map_err(|e| self.fail(e))?;
        }
        tx.commit().map_err(|e| self.fail(e))
    }

    /// Removes the subscription `id` (nothing if absent). Blocks.
    pub fn remove_blocking(&self, id: &str) -> Result<(), StoreError> {
        let tx = self.db.begin_write().map_err(|e| self.fail(e))?;
        {
            let mut table = tx.open_table(SUBSCRIPTIONS).map_err(|e| self.fail(e))?;
            table.remove(id).map_err(|e| self.fail(e))?;
        }
        tx.commit().map_err(|e| self.fail(e))
    }

    /// Runs `job` on a blocking thread with a handle on this store.
    async fn off_thread<T: Send + 'static>(
        &self,
        job: impl FnOnce(&RedbStore) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let store = self.clone();
        tokio::task::spawn_blocking(move || job(&store)).await?
    }
}

impl SubscriptionStore for RedbStore {
    fn load(&self) -> BoxFuture<'_, Result<Vec<Subscription>, StoreError>> {
        Box::pin(self.off_thread(RedbStore::load_blocking))
    }

    fn put<'a>(&'a self, sub: &'a Subscription) -> BoxFuture<'a, Result<(), StoreError>> {
        let sub = sub.clone();
        Box::pin(self.off_thread(move |s| s.put_blocking(&sub)))
    }

    fn remove<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<(), StoreError>> {
        let id = id.to_owned();
        Box::pin(self.off_thread(move |s| s.remove_blocking(&id)))
    }

    fn remove_expired(&self, ids: Vec<String>) -> BoxFuture<'_, Result<(), StoreError>> {
        Box::pin(self.off_thread(move |s| ids.iter().try_for_each(|id| s.remove_blocking(id))))
    }
}
