//! `cache`: answers repeated requests of the operations it may cache from memory.
//!
//! Put one handler in both flows of a service — `request = [["cache"]]` looks up,
//! `response = [["cache"]]` stores. It should come after the handlers that authenticate
//! (the identity is part of the key) and after those that change the Body (decrypt,
//! decompress), so it keys what the service sees.
//!
//! The key is the service, the operation, the Body's bytes, the authenticated identity
//! and the header blocks named in `key_headers`. An answer is stored only when it is a
//! SOAP answer with HTTP status 200 that is not a fault; it is served until `ttl_ms`
//! after it was stored; the least recently used entries are evicted to keep keys and
//! answers within `max_bytes`. A request with `Cache-Control: no-cache` (or `Pragma:
//! no-cache`) is not answered from the cache, one with `no-store` neither answered nor
//! stored. When an operation of `invalidate_on` passes, every entry of its service is
//! dropped (before it runs and again after it answered).

mod addressing;
mod names;
mod store;

use lather_envelope::{Fault, QName};
use lather_pipeline::{
    Access, BuildEnv, Direction, Handler, HandlerFuture, HandlerKind, Identity, Message,
    Observation, Parts, Patch, ReplyStatus, RequestCacheControl, SettingsError, Verdict,
};
use names::Operations;
use serde::Deserialize;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use store::{Key, Store, Tally};

/// Entries live this long by default (`ttl_ms`).
pub const DEFAULT_TTL_MS: u64 = 60_000;
/// The default budget for keys and answers (`max_bytes`): 16 MiB.
pub const DEFAULT_MAX_BYTES: u64 = 16 * 1024 * 1024;
/// The default largest answer stored (`max_entry_bytes`): 1 MiB.
pub const DEFAULT_MAX_ENTRY_BYTES: u64 = 1024 * 1024;

/// What the request side of a cache handler leaves for its response side.
#[derive(Debug, Clone, PartialEq)]
enum Pending {
    /// Store the answer under this key.
    Store { cache: usize, key: Key },
    /// A write operation: drop the service's entries again once it answered.
    Invalidate { cache: usize },
}

/// A response cache (see the module documentation).
pub struct Cache {
    cacheable: Operations,
    never: Operations,
    invalidate_on: Operations,
    key_headers: Vec<QName>,
    max_entry_bytes: usize,
    store: Mutex<Store>,
}

impl std::fmt::Debug for Cache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cache")
            .field("key_headers", &self.key_headers)
            .field("tally", &self.lock().tally())
            .finish_non_exhaustive()
    }
}

impl Cache {
    /// Who this cache is in a [`Pending`] note: its address, unique while it lives.
    fn id(&self) -> usize {
        std::ptr::from_ref(self) as usize
    }

    fn lock(&self) -> MutexGuard<'_, Store> {
        // A panic while holding the lock leaves the store consistent (every method updates
        // it in one go), so a poisoned lock is used as it is.
        self.store.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn on_request(&self, message: &Message) -> Result<Verdict, Fault> {
        let envelope = message.envelope();
        let context = message.context();
        let Some(operation) = envelope.operation() else {
            return Ok(Verdict::proceed());
        };
        if self.invalidate_on.contains(operation) {
            self.lock().invalidate(&context.service);
            let note = Pending::Invalidate { cache: self.id() };
            return Ok(Verdict::Continue(Patch::new().set_property(note)));
        }
        if !self.cacheable.contains(operation) || self.never.contains(operation) {
            return Ok(Verdict::proceed());
        }
        let asked = context
            .properties
            .get::<RequestCacheControl>()
            .copied()
            .unwrap_or_default();
        if asked.no_store {
            return Ok(Verdict::proceed());
        }
        let key = self.key(message, operation);
        if !asked.no_cache
            && let Some(answer) = self.lock().lookup(&key, Instant::now())
        {
            let answer = addressing::readdress(answer, envelope)?;
            return Ok(Verdict::Respond(Box::new(answer)));
        }
        let note = Pending::Store {
            cache: self.id(),
            key,
        };
        Ok(Verdict::Continue(Patch::new().set_property(note)))
    }

    fn on_response(&self, message: &Message) -> Result<(), Fault> {
        let context = message.context();
        match context.properties.get::<Pending>() {
            Some(Pending::Invalidate { cache }) if *cache == self.id() => {
                self.lock().invalidate(&context.service);
            }
            Some(Pending::Store { cache, key }) if *cache == self.id() => {
                let answer = message.envelope();
                let passed = context.properties.get::<ReplyStatus>().is_none();
                if answer.is_fault() || !passed || answer.as_bytes().len() > self.max_entry_bytes {
                    return Ok(());
                }
                let answer = addressing::strip(answer.clone())?;
                self.lock().insert(
                    key.clone(),
                    Arc::from(context.service.as_str()),
                    answer,
                    Instant::now(),
                );
            }
            _ => {}
        }
        Ok(())
    }

    /// The service, the operation, the identity, each key header block's bytes (or an
    /// absent mark) and the Body's bytes, separated by NUL bytes, which XML text never holds.
    fn key(&self, message: &Message, operation: &QName) -> Key {
        let envelope = message.envelope();
        let context = message.context();
        let body = envelope.body();
        let mut key = Vec::with_capacity(body.len() + 128);
        let mut field = |bytes: &[u8]| {
            key.extend_from_slice(bytes);
            key.push(0);
        };
        field(context.service.as_bytes());
        field(operation.namespace().as_bytes());
        field(operation.local().as_bytes());
        match context.properties.get::<Identity>() {
            Some(who) => field(who.name().as_bytes()),
            None => field(b"\x01"),
        }
        for name in &self.key_headers {
            match envelope.header(name) {
                Some(block) => field(&envelope.header_bytes(block)),
                None => field(b"\x01"),
            }
        }
        field(&body);
        Arc::from(key)
    }

    fn tally(&self) -> Tally {
        self.lock().tally()
    }
}

impl Handler for Cache {
    fn access(&self) -> Access {
        let reads = self
            .key_headers
            .iter()
            .cloned()
            .fold(Parts::none().body(), Parts::header);
        Access::read_only(reads)
    }

    fn call<'a>(&'a self, message: &'a Message) -> HandlerFuture<'a> {
        Box::pin(async move {
            let done = match message.context().direction {
                Direction::Request => self.on_request(message),
                Direction::Response => self.on_response(message).map(|()| Verdict::proceed()),
                Direction::Fault => Ok(Verdict::proceed()),
            };
            done.unwrap_or_else(Verdict::Fault)
        })
    }

    fn observations(&self) -> Vec<Observation> {
        let t = self.tally();
        vec![
            Observation::counter("cache_hits", "Requests answered from the cache", t.hits),
            Observation::counter(
                "cache_misses",
                "Cacheable requests not found in the cache (or found expired)",
                t.misses,
            ),
            Observation::counter("cache_stores", "Answers stored in the cache", t.stores),
            Observation::counter(
                "cache_evictions",
                "Entries evicted to keep the cache within max_bytes",
                t.evictions,
            ),
            Observation::counter(
                "cache_expirations",
                "Entries found past their ttl_ms and dropped",
                t.expirations,
            ),
            Observation::counter(
                "cache_invalidations",
                "Entries dropped because a write operation passed",
                t.invalidations,
            ),
            Observation::gauge("cache_entries", "Entries in the cache", t.entries),
            Observation::gauge(
                "cache_bytes",
                "Bytes the cache holds (keys and answers)",
                t.bytes,
            ),
        ]
    }
}

/// The `cache` kind.
#[derive(Debug, Clone, Copy, Default)]
pub struct CacheKind;

/// `[handlers.NAME]` settings of kind `cache`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CacheSettings {
    /// The operations whose answers may be cached: local names (`"GetPrice"`), qualified
    /// names (`"{urn:shop}GetPrice"`) or `"*"` for every operation. Required.
    pub operations: Vec<String>,
    /// Operations never cached, even when `operations` is `"*"` (default none).
    #[serde(default)]
    pub never: Vec<String>,
    /// Write operations: when one passes, the service's entries are dropped (default none).
    #[serde(default)]
    pub invalidate_on: Vec<String>,
    /// Header blocks that are part of the key, as `"{namespace}Name"` (default none).
    #[serde(default)]
    pub key_headers: Vec<String>,
    /// How long an entry is served, in milliseconds (default 60 000).
    pub ttl_ms: Option<u64>,
    /// The budget for keys and answers, in bytes (default 16 MiB).
    pub max_bytes: Option<u64>,
    /// The largest answer stored, in bytes (default 1 MiB).
    pub max_entry_bytes: Option<u64>,
}

impl HandlerKind for CacheKind {
    type Settings = CacheSettings;

    fn name(&self) -> &'static str {
        "cache"
    }

    /// Its request half and response half share this process's store.
    fn remote_capable(&self) -> bool {
        false
    }

    fn build(
        &self,
        settings: CacheSettings,
        _env: &BuildEnv<'_>,
    ) -> Result<Arc<dyn Handler>, SettingsError> {
        Ok(Arc::new(build(settings)?))
    }
}

fn build(settings: CacheSettings) -> Result<Cache, SettingsError> {
    let cacheable = Operations::parse("operations", &settings.operations)?;
    if cacheable.is_empty() {
        return Err(SettingsError::key(
            "operations",
            "names no operation: list the operations whose answers may be cached, or \"*\"",
        ));
    }
    let positive = |key: &'static str, value: Option<u64>, default: u64| match value {
        Some(0) => Err(SettingsError::key(key, "must be at least 1")),
        Some(v) => Ok(v),
        None => Ok(default),
    };
    let ttl = positive("ttl_ms", settings.ttl_ms, DEFAULT_TTL_MS)?;
    let max_bytes = positive("max_bytes", settings.max_bytes, DEFAULT_MAX_BYTES)?;
    let max_entry = positive(
        "max_entry_bytes",
        settings.max_entry_bytes,
        DEFAULT_MAX_ENTRY_BYTES.min(max_bytes),
    )?;
    if max_entry > max_bytes {
        return Err(SettingsError::key(
            "max_entry_bytes",
            format!("{max_entry} is more than max_bytes ({max_bytes})"),
        ));
    }
    let key_headers = settings
        .key_headers
        .iter()
        .map(|name| names::qualified("key_headers", name))
        .collect::<Result<_, _>>()?;
    Ok(Cache {
        cacheable,
        never: Operations::parse("never", &settings.never)?,
        invalidate_on: Operations::parse("invalidate_on", &settings.invalidate_on)?,
        key_headers,
        max_entry_bytes: usize::try_from(max_entry).unwrap_or(usize::MAX),
        store: Mutex::new(Store::new(
            usize::try_from(max_bytes).unwrap_or(usize::MAX),
            Duration::from_millis(ttl),
        )),
    })
}

#[cfg(test)]
mod tests;
