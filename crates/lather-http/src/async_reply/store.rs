//! Where accepted requests wait: in memory, or in a redb file that outlives the process.

use super::job::Job;
use redb::{Database, ReadableDatabase, ReadableTable, TableDefinition};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

const JOBS: TableDefinition<'static, &str, &[u8]> = TableDefinition::new("async_jobs");

/// A job store that cannot be read or written.
#[derive(Debug, thiserror::Error)]
#[error("the asynchronous reply store {path}: {reason}")]
pub(crate) struct JobStoreError {
    path: String,
    reason: String,
}

/// The jobs of one service, by MessageID.
#[derive(Debug, Clone)]
pub(crate) enum JobStore {
    /// Lost with the process.
    Memory(Arc<Mutex<BTreeMap<String, Job>>>),
    /// A redb file.
    File { db: Arc<Database>, path: String },
}

impl JobStore {
    /// A store in memory.
    pub(crate) fn memory() -> Self {
        JobStore::Memory(Arc::default())
    }

    /// The store in the redb file at `path` (created if absent). Blocks.
    pub(crate) fn open(path: &Path) -> Result<Self, JobStoreError> {
        let shown = path.display().to_string();
        let fail = |e: redb::Error| JobStoreError {
            path: shown.clone(),
            reason: e.to_string(),
        };
        let db = Database::create(path).map_err(|e| fail(e.into()))?;
        let tx = db.begin_write().map_err(|e| fail(e.into()))?;
        tx.open_table(JOBS).map_err(|e| fail(e.into()))?;
        tx.commit().map_err(|e| fail(e.into()))?;
        Ok(JobStore::File {
            db: Arc::new(db),
            path: shown,
        })
    }

    /// Every job kept. Blocks.
    pub(crate) fn load(&self) -> Result<Vec<Job>, JobStoreError> {
        match self {
            JobStore::Memory(jobs) => Ok(lock(jobs).values().cloned().collect()),
            JobStore::File { db, path } => {
                let fail = |e: redb::Error| self.error(path, e);
                let tx = db.begin_read().map_err(|e| fail(e.into()))?;
                let table = tx.open_table(JOBS).map_err(|e| fail(e.into()))?;
                let mut out = Vec::new();
                for row in table.iter().map_err(|e| fail(e.into()))? {
                    let (key, value) = row.map_err(|e| fail(e.into()))?;
                    match serde_json::from_slice::<Job>(value.value()) {
                        Ok(job) => out.push(job),
                        Err(e) => {
                            tracing::warn!(id = key.value(), "unreadable asynchronous job: {e}")
                        }
                    }
                }
                Ok(out)
            }
        }
    }

    /// The job `id`, if kept. Blocks.
    pub(crate) fn get(&self, id: &str) -> Result<Option<Job>, JobStoreError> {
        match self {
            JobStore::Memory(jobs) => Ok(lock(jobs).get(id).cloned()),
            JobStore::File { db, path } => {
                let fail = |e: redb::Error| self.error(path, e);
                let tx = db.begin_read().map_err(|e| fail(e.into()))?;
                let table = tx.open_table(JOBS).map_err(|e| fail(e.into()))?;
                let found = table.get(id).map_err(|e| fail(e.into()))?;
                Ok(found.and_then(|v| serde_json::from_slice(v.value()).ok()))
            }
        }
    }

    /// Writes (or replaces) `job`. Blocks.
    pub(crate) fn put(&self, job: &Job) -> Result<(), JobStoreError> {
        match self {
            JobStore::Memory(jobs) => {
                lock(jobs).insert(job.id.clone(), job.clone());
                Ok(())
            }
            JobStore::File { db, path } => {
                let fail = |e: redb::Error| self.error(path, e);
                let json = serde_json::to_vec(job).map_err(|e| JobStoreError {
                    path: path.clone(),
                    reason: e.to_string(),
                })?;
                let tx = db.begin_write().map_err(|e| fail(e.into()))?;
                {
                    let mut table = tx.open_table(JOBS).map_err(|e| fail(e.into()))?;
                    table
                        .insert(job.id.as_str(), json.as_slice())
                        .map_err(|e| fail(e.into()))?;
                }
                tx.commit().map_err(|e| fail(e.into()))
            }
        }
    }

    /// Removes the job `id` (nothing if absent). Blocks.
    pub(crate) fn remove(&self, id: &str) -> Result<(), JobStoreError> {
        match self {
            JobStore::Memory(jobs) => {
                lock(jobs).remove(id);
                Ok(())
            }
            JobStore::File { db, path } => {
                let fail = |e: redb::Error| self.error(path, e);
                let tx = db.begin_write().map_err(|e| fail(e.into()))?;
                {
                    let mut table = tx.open_table(JOBS).map_err(|e| fail(e.into()))?;
                    table.remove(id).map_err(|e| fail(e.into()))?;
                }
                tx.commit().map_err(|e| fail(e.into()))
            }
        }
    }

    fn error(&self, path: &str, e: redb::Error) -> JobStoreError {
        JobStoreError {
            path: path.to_owned(),
            reason: e.to_string(),
        }
    }
}

fn lock(jobs: &Mutex<BTreeMap<String, Job>>) -> std::sync::MutexGuard<'_, BTreeMap<String, Job>> {
    jobs.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;
    use lather_test_util::ScratchDir;

    fn job(id: &str) -> Job {
        Job {
            id: id.into(),
            reply_to: "http://a.example/r".into(),
            wsa_ns: lather_envelope::WSA10_NS.into(),
            soap: 12,
            action: None,
            request: "<e/>".into(),
            answer: None,
            answered_at: None,
        }
    }

    #[test]
    fn a_file_store_keeps_its_jobs_across_opens() {
        let dir = ScratchDir::new("async-store");
        let path = dir.join("jobs.redb");
        {
            let store = JobStore::open(&path).unwrap();
            store.put(&job("a")).unwrap();
            store.put(&job("b")).unwrap();
            store.remove("a").unwrap();
        }
        let store = JobStore::open(&path).unwrap();
        let ids: Vec<String> = store.load().unwrap().into_iter().map(|j| j.id).collect();
        assert_eq!(ids, ["b"]);
        assert_eq!(store.get("b").unwrap(), Some(job("b")));
        assert_eq!(store.get("a").unwrap(), None);
        let memory = JobStore::memory();
        memory.put(&job("m")).unwrap();
        assert_eq!(memory.load().unwrap().len(), 1);
    }
}
