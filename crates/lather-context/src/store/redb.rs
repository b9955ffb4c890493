//! Contexts' durable home on one node: one redb file, URI → the context as JSON.
//!
//! The work runs on tokio's blocking threads; each change is one write transaction, so the
//! version check, the capacity check and the write are atomic.

use super::{ContextStore, PutOutcome, StoreError};
use crate::StoredContext;
use futures_util::future::BoxFuture;
use redb::{Database, ReadableDatabase, ReadableTable, ReadableTableMetadata, TableDefinition};
use std::path::{Path, PathBuf};
use std::sync::Arc;

const CONTEXTS: TableDefinition<'static, &str, &[u8]> = TableDefinition::new("contexts");

/// A redb file holding contexts.
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
        tx.open_table(CONTEXTS).map_err(|e| fail(e.into()))?;
        tx.commit().map_err(|e| fail(e.into()))?;
        Ok(RedbStore {
            db: Arc::new(db),
            path: path.to_owned(),
        })
    }

    fn fail(&self, e: impl Into<redb::Error>) -> StoreError {
        StoreError::file(&self.path, e)
    }

    fn get_blocking(&self, uri: &str) -> Result<Option<StoredContext>, StoreError> {
        let tx = self.db.begin_read().map_err(|e| self.fail(e))?;
        let table = tx.open_table(CONTEXTS).map_err(|e| self.fail(e))?;
        let Some(value) = table.get(uri).map_err(|e| self.fail(e))? else {
            return Ok(None);
        };
        Ok(Some(serde_json::from_slice(value.value())?))
    }

    fn put_blocking(
        &self,
        context: &StoredContext,
        expected: Option<u64>,
        capacity: usize,
    ) -> Result<PutOutcome, StoreError> {
        let json = serde_json::to_vec(context)?;
        let tx = self.db.begin_write().map_err(|e| self.fail(e))?;
        let outcome = {
            let mut table = tx.open_table(CONTEXTS).map_err(|e| self.fail(e))?;
            let stored = match table.get(context.uri.as_str()).map_err(|e| self.fail(e))? {
                Some(value) => {
                    Some(serde_json::from_slice::<StoredContext>(value.value())?.version)
                }
                None => None,
            };
            let len = table.len().map_err(|e| self.fail(e))?;
            if stored != expected {
                PutOutcome::Conflict
            } else if stored.is_none() && len >= capacity as u64 {
                PutOutcome::Full
            } else {
                table
                    .insert(context.uri.as_str(), json.as_slice())
                    .map_err(|e| self.fail(e))?;
                PutOutcome::Written
            }
        };
        if outcome == PutOutcome::Written {
            tx.commit().map_err(|e| self.fail(e))?;
        } else {
            tx.abort().map_err(|e| self.fail(e))?;
        }
        Ok(outcome)
    }

    fn remove_blocking(&self, uri: &str, expected: u64) -> Result<bool, StoreError> {
        let tx = self.db.begin_write().map_err(|e| self.fail(e))?;
        let removed = {
            let mut table = tx.open_table(CONTEXTS).map_err(|e| self.fail(e))?;
            let matches = match table.get(uri).map_err(|e| self.fail(e))? {
                Some(value) => {
                    serde_json::from_slice::<StoredContext>(value.value())?.version == expected
                }
                None => false,
            };
            if matches {
                table.remove(uri).map_err(|e| self.fail(e))?;
            }
            matches
        };
        tx.commit().map_err(|e| self.fail(e))?;
        Ok(removed)
    }

    fn remove_expired_blocking(&self, now_ms: u64) -> Result<usize, StoreError> {
        let tx = self.db.begin_write().map_err(|e| self.fail(e))?;
        let removed = {
            let mut table = tx.open_table(CONTEXTS).map_err(|e| self.fail(e))?;
            let mut expired = Vec::new();
            for row in table.iter().map_err(|e| self.fail(e))? {
                let (key, value) = row.map_err(|e| self.fail(e))?;
                // An unreadable row is old garbage: it goes too.
                let gone = serde_json::from_slice::<StoredContext>(value.value())
                    .map_or(true, |c| c.is_expired(now_ms));
                if gone {
                    expired.push(key.value().to_owned());
                }
            }
            for uri in &expired {
                table.remove(uri.as_str()).map_err(|e| self.fail(e))?;
            }
            expired.len()
        };
        tx.commit().map_err(|e| self.fail(e))?;
        Ok(removed)
    }

    fn count_blocking(&self) -> Result<usize, StoreError> {
        let tx = self.db.begin_read().map_err(|e| self.fail(e))?;
        let table = tx.open_table(CONTEXTS).map_err(|e| self.fail(e))?;
        let len = table.len().map_err(|e| self.fail(e))?;
        Ok(usize::try_from(len).unwrap_or(usize::MAX))
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

impl ContextStore for RedbStore {
    fn get<'a>(&'a self, uri: &'a str) -> BoxFuture<'a, Result<Option<StoredContext>, StoreError>> {
        let uri = uri.to_owned();
        Box::pin(self.off_thread(move |s| s.get_blocking(&uri)))
    }

    fn put<'a>(
        &'a self,
        context: &'a StoredContext,
        expected: Option<u64>,
        capacity: usize,
    ) -> BoxFuture<'a, Result<PutOutcome, StoreError>> {
        let context = context.clone();
        Box::pin(self.off_thread(move |s| s.put_blocking(&context, expected, capacity)))
    }

    fn remove<'a>(
        &'a self,
        uri: &'a str,
        expected: u64,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        let uri = uri.to_owned();
        Box::pin(self.off_thread(move |s| s.remove_blocking(&uri, expected)))
    }

    fn remove_expired(&self, now_ms: u64) -> BoxFuture<'_, Result<usize, StoreError>> {
        Box::pin(self.off_thread(move |s| s.remove_expired_blocking(now_ms)))
    }

    fn count(&self) -> BoxFuture<'_, Result<usize, StoreError>> {
        Box::pin(self.off_thread(RedbStore::count_blocking))
    }
}
