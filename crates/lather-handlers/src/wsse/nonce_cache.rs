//! The replay cache: the nonces seen recently, as fixed-size digests, in a bounded table
//! purged of expired entries on every use.

use sha2::{Digest as _, Sha256};
use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

/// What the cache keeps of a nonce: the first 16 bytes of its SHA-256 — fixed in size
/// whatever the nonce's length, and collision-free in practice (2⁻⁶⁴ at four billion
/// entries).
type Key = [u8; 16];

/// The answer of [`NonceCache::check_and_remember`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Seen {
    /// Not seen within its lifetime: now remembered.
    New,
    /// Seen before and not yet expired: a replay.
    Replay,
    /// Not seen, but the cache holds as many nonces as it may: not remembered.
    Full,
}

/// The nonces seen within their lifetime, at most `capacity` of them.
///
/// Each nonce is stored as a 16-byte digest with its expiry (seconds since the epoch), in
/// a table and in an expiry queue: about 50 bytes per entry plus the tables' spare room,
/// so a cache of `capacity` entries stays within a fixed size whatever nonces clients send.
/// Entries are queued in the order they expire (every entry lives the same time from when
/// it is stored), and each call first drops the expired ones at the head of the queue: the
/// cache holds only live nonces, with no sweep to schedule.
#[derive(Debug)]
pub(crate) struct NonceCache {
    capacity: usize,
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    /// Key → expiry.
    seen: HashMap<Key, i64>,
    /// `(expiry, key)` in the order stored, hence of expiry while the clock moves forward.
    queue: VecDeque<(i64, Key)>,
    /// Replays refused.
    replays: u64,
    /// Nonces refused because the cache was full.
    full: u64,
}

impl NonceCache {
    /// An empty cache holding at most `capacity` nonces (at least one).
    pub(crate) fn new(capacity: usize) -> Self {
        NonceCache {
            capacity: capacity.max(1),
            inner: Mutex::new(Inner::default()),
        }
    }

    /// Looks `nonce` up at `now` and remembers it until `expires` if it is new and there
    /// is room. Expired entries are dropped first.
    pub(crate) fn check_and_remember(&self, nonce: &[u8], now: i64, expires: i64) -> Seen {
        let key = key_of(nonce);
        let mut inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        inner.purge(now);
        if inner.seen.get(&key).is_some_and(|until| *until >= now) {
            inner.replays += 1;
            return Seen::Replay;
        }
        if inner.seen.len() >= self.capacity || inner.queue.len() >= self.capacity {
            inner.full += 1;
            return Seen::Full;
        }
        inner.seen.insert(key, expires);
        inner.queue.push_back((expires, key));
        Seen::New
    }

    /// Nonces remembered now (expired ones not yet dropped included).
    pub(crate) fn len(&self) -> usize {
        self.lock().seen.len()
    }

    /// Most nonces remembered at once.
    pub(crate) fn capacity(&self) -> usize {
        self.capacity
    }

    /// Replays refused so far.
    pub(crate) fn replays(&self) -> u64 {
        self.lock().replays
    }

    /// Nonces refused so far because the cache was full.
    pub(crate) fn refused_full(&self) -> u64 {
        self.lock().full
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Inner {
    /// Drops the entries at the head of the queue that expired before `now`.
    fn purge(&mut self, now: i64) {
        while let Some(&(expires, key)) = self.queue.front() {
            if expires >= now {
                break;
            }
            self.queue.pop_front();
            // The table may hold a later expiry for the key (stored again after the clock
            // went back); only the entry this queue slot stands for goes.
            if self.seen.get(&key) == Some(&expires) {
                self.seen.remove(&key);
            }
        }
    }
}

fn key_of(nonce: &[u8]) -> Key {
    let digest = Sha256::digest(nonce);
    let mut key = [0u8; 16];
    key.copy_from_slice(&digest[..16]);
    key
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_nonce_is_a_replay_until_it_expires() {
        let cache = NonceCache::new(10);
        assert_eq!(cache.check_and_remember(b"n", 100, 400), Seen::New);
        assert_eq!(cache.check_and_remember(b"n", 200, 500), Seen::Replay);
        assert_eq!(cache.check_and_remember(b"n", 400, 700), Seen::Replay);
        assert_eq!(cache.check_and_remember(b"n", 401, 701), Seen::New);
        assert_eq!(cache.replays(), 2);
    }

    #[test]
    fn expired_entries_are_dropped_as_new_ones_come() {
        let cache = NonceCache::new(1000);
        for i in 0u32..10_000 {
            let now = i64::from(i);
            // Each lives 100 s: at most ~101 are alive at once.
            assert_eq!(
                cache.check_and_remember(&i.to_be_bytes(), now, now + 100),
                Seen::New
            );
            assert!(cache.len() <= 101, "{} at {now}", cache.len());
        }
        assert_eq!(cache.refused_full(), 0);
    }

    #[test]
    fn a_full_cache_refuses_new_nonces_but_still_knows_replays() {
        let cache = NonceCache::new(3);
        for n in [b"a", b"b", b"c"] {
            assert_eq!(cache.check_and_remember(n, 0, 100), Seen::New);
        }
        assert_eq!(cache.check_and_remember(b"d", 1, 101), Seen::Full);
        assert_eq!(cache.check_and_remember(b"a", 1, 101), Seen::Replay);
        assert_eq!(cache.len(), 3);
        // Once they expire there is room again.
        assert_eq!(cache.check_and_remember(b"d", 101, 201), Seen::New);
        assert_eq!(cache.len(), 1);
        assert_eq!(cache.refused_full(), 1);
    }

    #[test]
    fn long_nonces_cost_what_short_ones_do() {
        let cache = NonceCache::new(10);
        let big = vec![7u8; 1 << 20];
        assert_eq!(cache.check_and_remember(&big, 0, 10), Seen::New);
        assert_eq!(cache.check_and_remember(&big, 1, 11), Seen::Replay);
        assert_eq!(key_of(&big).len(), 16);
    }
}
