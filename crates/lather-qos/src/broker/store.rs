//! The broker's offers on disk: one SQLite table in WAL mode (rusqlite, SQLite bundled).
//! Writes happen in one transaction each; the broker reads the table once, at start, and
//! serves selections from its in-memory index after that.

use crate::offer::Offer;
use lather_config::CompressionPreference;
use rusqlite::{Connection, params};
use std::path::Path;
use std::sync::Mutex;

/// Why the offer store failed.
#[derive(Debug, thiserror::Error)]
#[error("offer store {place}: {source}")]
pub struct StoreError {
    place: String,
    #[source]
    source: rusqlite::Error,
}

/// One stored offer and who may change it.
#[derive(Debug, Clone, PartialEq)]
pub struct Held {
    /// The offer.
    pub offer: Offer,
    /// The address that registered its endpoint.
    pub owner: String,
    /// When its lease ends, in seconds since the Unix epoch.
    pub expires: u64,
}

/// The SQLite file (or an in-memory database).
#[derive(Debug)]
pub struct OfferStore {
    connection: Mutex<Connection>,
    place: String,
}

const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS offers (
    endpoint TEXT NOT NULL,
    name TEXT NOT NULL,
    service TEXT NOT NULL,
    response_time_ms INTEGER NOT NULL,
    throughput REAL NOT NULL,
    price REAL NOT NULL,
    compression TEXT,
    class TEXT,
    adapts_to TEXT,
    owner TEXT NOT NULL,
    expires INTEGER NOT NULL,
    PRIMARY KEY (endpoint, name)
)";

impl OfferStore {
    /// Opens (creating when missing) the store at `path`, or one in memory without a path.
    pub fn open(path: Option<&Path>) -> Result<OfferStore, StoreError> {
        let place = path.map_or_else(|| "in memory".to_owned(), |p| p.display().to_string());
        let fail = |source| StoreError {
            place: place.clone(),
            source,
        };
        let connection = match path {
            Some(p) => Connection::open(p),
            None => Connection::open_in_memory(),
        }
        .map_err(fail)?;
        if path.is_some() {
            // One broker per file: the index in memory is the file's only other copy, so a
            // second process (or service) writing the same file would make them differ.
            connection
                .pragma_update(None, "locking_mode", "EXCLUSIVE")
                .map_err(fail)?;
            connection
                .pragma_update(None, "journal_mode", "WAL")
                .map_err(fail)?;
        }
        connection
            .pragma_update(None, "synchronous", "NORMAL")
            .map_err(fail)?;
        connection
            .busy_timeout(std::time::Duration::from_secs(5))
            .map_err(fail)?;
        connection.execute(SCHEMA, []).map_err(fail)?;
        Ok(OfferStore {
            connection: Mutex::new(connection),
            place,
        })
    }

    fn fail(&self, source: rusqlite::Error) -> StoreError {
        StoreError {
            place: self.place.clone(),
            source,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Connection> {
        // A panic inside a transaction rolls it back when the transaction drops: the
        // connection is still consistent.
        self.connection.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Replaces every offer of each endpoint in `endpoints` by `offers` (owned by `owner`,
    /// until `expires`), in one transaction.
    pub fn replace(
        &self,
        endpoints: &[String],
        offers: &[Offer],
        owner: &str,
        expires: u64,
    ) -> Result<(), StoreError> {
        let mut connection = self.lock();
        let tx = connection.transaction().map_err(|e| self.fail(e))?;
        for endpoint in endpoints {
            tx.execute("DELETE FROM offers WHERE endpoint = ?1", [endpoint])
                .map_err(|e| self.fail(e))?;
        }
        {
            let mut insert = tx
                .prepare_cached(
                    "INSERT INTO offers (endpoint, name, service, response_time_ms, throughput,
                     price, compression, class, adapts_to, owner, expires)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
                )
                .map_err(|e| self.fail(e))?;
            for o in offers {
                insert
                    .execute(params![
                        o.endpoint,
                        o.name,
                        o.service,
                        i64::try_from(o.response_time_ms).unwrap_or(i64::MAX),
                        o.throughput,
                        o.price,
                        o.compression.map(CompressionPreference::as_str),
                        o.class,
                        o.adapts_to,
                        owner,
                        i64::try_from(expires).unwrap_or(i64::MAX),
                    ])
                    .map_err(|e| self.fail(e))?;
            }
        }
        tx.commit().map_err(|e| self.fail(e))
    }

    /// Removes the offers of `endpoint`; how many there were.
    pub fn remove(&self, endpoint: &str) -> Result<usize, StoreError> {
        self.lock()
            .execute("DELETE FROM offers WHERE endpoint = ?1", [endpoint])
            .map_err(|e| self.fail(e))
    }

    /// Removes the offers whose lease ended before `now` (seconds since the epoch).
    pub fn purge(&self, now: u64) -> Result<usize, StoreError> {
        self.lock()
            .execute(
                "DELETE FROM offers WHERE expires < ?1",
                [i64::try_from(now).unwrap_or(i64::MAX)],
            )
            .map_err(|e| self.fail(e))
    }

    /// Every stored offer.
    pub fn load(&self) -> Result<Vec<Held>, StoreError> {
        let connection = self.lock();
        let mut query = connection
            .prepare(
                "SELECT endpoint, name, service, response_time_ms, throughput, price,
                 compression, class, adapts_to, owner, expires FROM offers",
            )
            .map_err(|e| self.fail(e))?;
        let rows = query
            .query_map([], |row| {
                let compression: Option<String> = row.get(6)?;
                Ok(Held {
                    offer: Offer {
                        endpoint: row.get(0)?,
                        name: row.get(1)?,
                        service: row.get(2)?,
                        response_time_ms: u64::try_from(row.get::<_, i64>(3)?).unwrap_or(0),
                        throughput: row.get(4)?,
                        price: row.get(5)?,
                        compression: compression
                            .as_deref()
                            .and_then(CompressionPreference::parse),
                        class: row.get(7)?,
                        adapts_to: row.get(8)?,
                    },
                    owner: row.get(9)?,
                    expires: u64::try_from(row.get::<_, i64>(10)?).unwrap_or(0),
                })
            })
            .map_err(|e| self.fail(e))?;
        rows.collect::<Result<Vec<_>, _>>()
            .map_err(|e| self.fail(e))
    }
}
