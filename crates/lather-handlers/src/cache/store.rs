//! The cache's memory: entries with an expiry, least recently used evicted first, within a
//! byte budget.

use lather_envelope::Envelope;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What identifies a cached answer: the service, the operation, the Body's bytes, the
/// authenticated identity and the key header blocks, written one after another with
/// separators that cannot occur in them.
pub(crate) type Key = Arc<[u8]>;

/// One cached answer.
struct Entry {
    answer: Envelope,
    service: Arc<str>,
    expires: Instant,
    /// Its place in the recency order (larger is more recent).
    used: u64,
    bytes: usize,
}

/// Counts since the cache was built, and its size now.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Tally {
    pub(crate) hits: u64,
    pub(crate) misses: u64,
    pub(crate) stores: u64,
    pub(crate) evictions: u64,
    pub(crate) expirations: u64,
    pub(crate) invalidations: u64,
    pub(crate) entries: u64,
    pub(crate) bytes: u64,
}

/// Entries by key, with their recency order and the bytes they hold. Not synchronised: the
/// handler keeps it behind a mutex.
pub(crate) struct Store {
    entries: HashMap<Key, Entry>,
    /// Recency tick → key, oldest first.
    order: BTreeMap<u64, Key>,
    tick: u64,
    bytes: usize,
    max_bytes: usize,
    ttl: Duration,
    tally: Tally,
}

impl Store {
    /// An empty store holding at most `max_bytes` (keys and answers), each entry for `ttl`.
    pub(crate) fn new(max_bytes: usize, ttl: Duration) -> Self {
        Store {
            entries: HashMap::new(),
            order: BTreeMap::new(),
            tick: 0,
            bytes: 0,
            max_bytes,
            ttl,
            tally: Tally::default(),
        }
    }

    /// The answer stored under `key` if it has not expired at `now` (an expired entry is
    /// removed); a hit makes it the most recently used.
    pub(crate) fn lookup(&mut self, key: &[u8], now: Instant) -> Option<Envelope> {
        let expired = match self.entries.get(key) {
            None => {
                self.tally.misses += 1;
                return None;
            }
            Some(entry) => entry.expires <= now,
        };
        if expired {
            self.remove(key);
            self.tally.expirations += 1;
            self.tally.misses += 1;
            return None;
        }
        self.tick += 1;
        let tick = self.tick;
        let entry = self.entries.get_mut(key)?;
        if let Some(key) = self.order.remove(&entry.used) {
            self.order.insert(tick, key);
        }
        entry.used = tick;
        self.tally.hits += 1;
        Some(entry.answer.clone())
    }

    /// Stores `answer` under `key` until `now` + TTL, evicting the least recently used
    /// entries until it fits. An answer bigger than the whole budget is not stored; false
    /// then.
    pub(crate) fn insert(
        &mut self,
        key: Key,
        service: Arc<str>,
        answer: Envelope,
        now: Instant,
    ) -> bool {
        let bytes = key.len() + answer.as_bytes().len();
        if bytes > self.max_bytes {
            return false;
        }
        self.remove(&key);
        while self.bytes + bytes > self.max_bytes {
            let Some((_, oldest)) = self.order.pop_first() else {
                break;
            };
            if let Some(entry) = self.entries.remove(&oldest) {
                self.bytes -= entry.bytes;
                self.tally.evictions += 1;
            }
        }
        self.tick += 1;
        self.order.insert(self.tick, key.clone());
        self.entries.insert(
            key,
            Entry {
                answer,
                service,
                expires: now + self.ttl,
                used: self.tick,
                bytes,
            },
        );
        self.bytes += bytes;
        self.tally.stores += 1;
        true
    }

    /// Drops every entry of `service` (a write operation passed); how many.
    pub(crate) fn invalidate(&mut self, service: &str) -> usize {
        let doomed: Vec<Key> = self
            .entries
            .iter()
            .filter(|(_, e)| &*e.service == service)
            .map(|(k, _)| k.clone())
            .collect();
        for key in &doomed {
            self.remove(key);
        }
        self.tally.invalidations += doomed.len() as u64;
        doomed.len()
    }

    /// The counts, with the current size.
    pub(crate) fn tally(&self) -> Tally {
        Tally {
            entries: self.entries.len() as u64,
            bytes: self.bytes as u64,
            ..self.tally
        }
    }

    fn remove(&mut self, key: &[u8]) {
        if let Some(entry) = self.entries.remove(key) {
            self.order.remove(&entry.used);
            self.bytes -= entry.bytes;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lather_envelope::Limits;

    fn answer(text: &str) -> Envelope {
        let xml = format!(
            r#"<s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope"><s:Body><r xmlns="urn:r">{text}</r></s:Body></s:Envelope>"#
        );
        Envelope::parse(xml.into_bytes().into(), &Limits::default()).unwrap()
    }

    fn key(text: &str) -> Key {
        Arc::from(text.as_bytes())
    }

    fn text(lookup: Option<Envelope>) -> Option<String> {
        lookup.map(|e| String::from_utf8(e.body().to_vec()).unwrap())
    }

    #[test]
    fn an_entry_is_served_until_its_ttl_and_never_after() {
        let t0 = Instant::now();
        let mut store = Store::new(1 << 20, Duration::from_millis(100));
        assert!(store.insert(key("a"), "s".into(), answer("1"), t0));
        assert!(text(store.lookup(b"a", t0 + Duration::from_millis(99))).is_some());
        assert!(text(store.lookup(b"a", t0 + Duration::from_millis(100))).is_none());
        let tally = store.tally();
        assert_eq!((tally.hits, tally.misses, tally.expirations), (1, 1, 1));
        assert_eq!((tally.entries, tally.bytes), (0, 0));
    }

    #[test]
    fn the_least_recently_used_entry_goes_first_and_the_budget_holds() {
        let t0 = Instant::now();
        let one = key("a").len() + answer("1").as_bytes().len();
        let mut store = Store::new(one * 2, Duration::from_secs(60));
        store.insert(key("a"), "s".into(), answer("1"), t0);
        store.insert(key("b"), "s".into(), answer("2"), t0);
        // "a" used last, so "b" is the one evicted for "c".
        assert!(text(store.lookup(b"a", t0)).is_some());
        store.insert(key("c"), "s".into(), answer("3"), t0);
        assert!(text(store.lookup(b"b", t0)).is_none());
        assert!(text(store.lookup(b"a", t0)).is_some());
        assert!(text(store.lookup(b"c", t0)).is_some());
        let tally = store.tally();
        assert_eq!(tally.evictions, 1);
        assert!(tally.bytes as usize <= one * 2);
        assert_eq!(tally.entries, 2);
    }

    #[test]
    fn an_answer_bigger_than_the_budget_is_not_stored() {
        let mut store = Store::new(10, Duration::from_secs(60));
        assert!(!store.insert(key("a"), "s".into(), answer("1"), Instant::now()));
        assert_eq!(store.tally().entries, 0);
    }

    #[test]
    fn invalidation_drops_only_the_services_entries() {
        let t0 = Instant::now();
        let mut store = Store::new(1 << 20, Duration::from_secs(60));
        store.insert(key("a"), "prices".into(), answer("1"), t0);
        store.insert(key("b"), "prices".into(), answer("2"), t0);
        store.insert(key("c"), "stock".into(), answer("3"), t0);
        assert_eq!(store.invalidate("prices"), 2);
        assert!(text(store.lookup(b"a", t0)).is_none());
        assert!(text(store.lookup(b"c", t0)).is_some());
        assert_eq!(store.tally().invalidations, 2);
    }

    #[test]
    fn storing_a_key_again_replaces_its_answer_and_its_bytes() {
        let t0 = Instant::now();
        let mut store = Store::new(1 << 20, Duration::from_secs(60));
        store.insert(key("a"), "s".into(), answer("1"), t0);
        let before = store.tally().bytes;
        store.insert(key("a"), "s".into(), answer("2"), t0);
        assert_eq!(store.tally().bytes, before);
        assert_eq!(store.tally().entries, 1);
        assert!(text(store.lookup(b"a", t0)).unwrap().contains(">2<"));
    }
}
