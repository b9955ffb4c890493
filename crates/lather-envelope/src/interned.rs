//! Names shared across messages on one thread: the namespaces and local names a thread
//! parses again and again (the SOAP and WS-Addressing namespaces, a service's operations)
//! are allocated once and handed out as clones of one [`Arc<str>`]. A small cache per
//! thread, of short strings only: a message of names never seen before costs what it did
//! without the cache, and a hostile one cannot make it grow.
//!
//! The cache is set-associative: a string's length and its first and last eight bytes
//! pick one set of [`WAYS`] slots, so a lookup compares at most [`WAYS`] strings, not every
//! string kept. A set that is full gives up its slots round-robin.

use std::cell::RefCell;
use std::sync::Arc;

/// Sets of slots (a power of two).
const SETS: usize = 16;
const _: () = assert!(SETS.is_power_of_two());
/// Slots per set.
const WAYS: usize = 4;
/// Longest string kept (bytes); longer ones are allocated each time.
pub(crate) const LONGEST: usize = 256;

struct Recent {
    sets: [[Option<Arc<str>>; WAYS]; SETS],
    /// Per set, the slot to give up next when it is full.
    next: [u8; SETS],
}

impl Recent {
    const fn new() -> Self {
        Recent {
            sets: [const { [const { None }; WAYS] }; SETS],
            next: [0; SETS],
        }
    }
}

thread_local! {
    static RECENT: RefCell<Recent> = const { RefCell::new(Recent::new()) };
}

/// The first eight bytes (fewer: all of them) as a number, without a call to copy them.
fn word(bytes: &[u8]) -> u64 {
    match bytes.first_chunk::<8>() {
        Some(eight) => u64::from_le_bytes(*eight),
        None => bytes.iter().fold(0, |w, &b| (w << 8) | u64::from(b)),
    }
}

/// The set `text` belongs to: from its length, first and last eight bytes (names that
/// share a long prefix, as namespace URIs do, differ at their end or in length).
fn set_of(text: &[u8]) -> usize {
    let head = word(text);
    let tail = word(&text[text.len().saturating_sub(8)..]);
    let mixed =
        (head ^ tail.rotate_left(31) ^ text.len() as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (mixed >> (64 - SETS.trailing_zeros())) as usize
}

/// `text` as a shared string: the cached one when this thread has it, else a new one
/// (kept when short enough).
pub(crate) fn shared(text: &str) -> Arc<str> {
    if text.len() > LONGEST {
        return Arc::from(text);
    }
    RECENT.with(|recent| {
        let Ok(mut recent) = recent.try_borrow_mut() else {
            return Arc::from(text);
        };
        let set = set_of(text.as_bytes());
        let slots = &mut recent.sets[set];
        if let Some(hit) = slots.iter().flatten().find(|s| ***s == *text) {
            return hit.clone();
        }
        let fresh: Arc<str> = Arc::from(text);
        let free = slots.iter().position(Option::is_none);
        let at = match free {
            Some(at) => at,
            None => {
                let at = usize::from(recent.next[set]);
                recent.next[set] = ((at + 1) % WAYS) as u8;
                at
            }
        };
        recent.sets[set][at] = Some(fresh.clone());
        fresh
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kept() -> usize {
        RECENT.with(|r| r.borrow().sets.iter().flatten().flatten().count())
    }

    #[test]
    fn a_string_seen_again_is_the_same_allocation() {
        let a = shared("urn:interned:test");
        let b = shared("urn:interned:test");
        assert!(Arc::ptr_eq(&a, &b));
    }

    #[test]
    fn long_strings_are_not_kept_and_the_cache_stays_bounded() {
        let long = "n".repeat(LONGEST + 1);
        let a = shared(&long);
        let b = shared(&long);
        assert!(!Arc::ptr_eq(&a, &b));
        for i in 0..SETS * WAYS * 3 {
            let _ = shared(&format!("urn:fill:{i}"));
        }
        assert!(kept() <= SETS * WAYS);
        // The newest are still there.
        let newest = format!("urn:fill:{}", SETS * WAYS * 3 - 1);
        assert!(Arc::ptr_eq(&shared(&newest), &shared(&newest)));
    }

    #[test]
    fn the_names_of_a_soap_exchange_all_stay() {
        // The names a SOAP service sees on every message must not push each other out.
        let names = [
            "http://www.w3.org/2003/05/soap-envelope",
            "http://schemas.xmlsoap.org/soap/envelope/",
            "http://www.w3.org/2005/08/addressing",
            "http://schemas.xmlsoap.org/ws/2004/08/addressing",
            "http://schemas.xmlsoap.org/ws/2004/08/eventing",
            "http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-wssecurity-secext-1.0.xsd",
            "urn:lather:eventing",
            "Envelope",
            "Header",
            "Body",
            "Action",
            "To",
            "MessageID",
            "ReplyTo",
            "RelatesTo",
            "Identifier",
            "EventStamp",
            "published",
            "mustUnderstand",
        ];
        std::thread::spawn(move || {
            let first: Vec<Arc<str>> = names.iter().map(|n| shared(n)).collect();
            let again: Vec<Arc<str>> = names.iter().map(|n| shared(n)).collect();
            let pushed_out: Vec<&str> = names
                .iter()
                .zip(first.iter().zip(&again))
                .filter(|(_, (a, b))| !Arc::ptr_eq(a, b))
                .map(|(name, _)| *name)
                .collect();
            assert!(pushed_out.is_empty(), "pushed out: {pushed_out:?}");
        })
        .join()
        .unwrap();
    }

    #[test]
    fn strings_that_share_their_ends_are_told_apart() {
        // Same length, same first and last eight bytes: only the middle differs.
        let a = shared("urn:aaaaaaaa:one:bbbbbbbb");
        let b = shared("urn:aaaaaaaa:two:bbbbbbbb");
        assert_eq!(&*a, "urn:aaaaaaaa:one:bbbbbbbb");
        assert_eq!(&*b, "urn:aaaaaaaa:two:bbbbbbbb");
        for len in [0, 1, 7, 8, 9, 15, 16, 17, 100, LONGEST] {
            let text = "x".repeat(len);
            let (c, d) = (shared(&text), shared(&text));
            assert!(Arc::ptr_eq(&c, &d), "length {len}");
            assert_eq!(&*c, text);
        }
    }
}
