//! Subscriptions' durable home: one redb file, id → the subscription as JSON.
//!
//! Every function here blocks; the source calls them on tokio's blocking threads.

use crate::Subscription;
use redb::{Database, ReadableDatabase, ReadableTable, TableDefinition};
use std::path::Path;

const SUBSCRIPTIONS: TableDefinition<'static, &str, &[u8]> = TableDefinition::new("subscriptions");

/// The redb database.
#[derive(Debug)]
pub(crate) struct Store {
    db: Database,
}

/// A store failure, as text for the fault's reason.
pub(crate) type StoreError = String;

impl Store {
    /// Opens (creating if absent) the store at `path`.
    pub(crate) fn open(path: &Path) -> Result<Store, StoreError> {
        let fail = |e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
        let db = Database::create(path).map_err(|e| fail(&e))?;
        let tx = db.begin_write().map_err(|e| fail(&e))?;
        tx.open_table(SUBSCRIPTIONS).map_err(|e| fail(&e))?;
        tx.commit().map_err(|e| fail(&e))?;
        Ok(Store { db })
    }

    /// Every stored subscription (unreadable rows are skipped with a warning).
    pub(crate) fn load(&self) -> Result<Vec<Subscription>, StoreError> {
        let tx = self.db.begin_read().map_err(|e| e.to_string())?;
        let table = tx.open_table(SUBSCRIPTIONS).map_err(|e| e.to_string())?;
        let mut out = Vec::new();
        for row in table.iter().map_err(|e| e.to_string())? {
            let (key, value) = row.map_err(|e| e.to_string())?;
            match serde_json::from_slice::<Subscription>(value.value()) {
                Ok(sub) => out.push(sub),
                Err(e) => tracing::warn!(id = key.value(), "unreadable subscription: {e}"),
            }
        }
        Ok(out)
    }

    /// Writes (or replaces) `sub`.
    pub(crate) fn put(&self, sub: &Subscription) -> Result<(), StoreError> {
        let json = serde_json::to_vec(sub).map_err(|e| e.to_string())?;
        let tx = self.db.begin_write().map_err(|e| e.to_string())?;
        {
            let mut table = tx.open_table(SUBSCRIPTIONS).map_err(|e| e.to_string())?;
            table
                .insert(sub.id.as_str(), json.as_slice())
                .map_err(|e| e.to_string())?;
        }
        tx.commit().map_err(|e| e.to_string())
    }

    /// Removes the subscription `id` (nothing if absent).
    pub(crate) fn remove(&self, id: &str) -> Result<(), StoreError> {
        let tx = self.db.begin_write().map_err(|e| e.to_string())?;
        {
            let mut table = tx.open_table(SUBSCRIPTIONS).map_err(|e| e.to_string())?;
            table.remove(id).map_err(|e| e.to_string())?;
        }
        tx.commit().map_err(|e| e.to_string())
    }
}
