//! Names shared across messages on one thread: the namespaces and local names a thread
//! parses again and again (the SOAP and WS-Addressing namespaces, a service's operations)
//! are allocated once and handed out as clones of one [`Arc<str>`]. A small cache per
//! thread, of short strings only, replaced round-robin: a message of names never seen
//! before costs what it did without the cache, and a hostile one cannot make it grow.

use std::cell::RefCell;
use std::sync::Arc;

/// Strings kept per thread.
const SLOTS: usize = 64;
/// Longest string kept (bytes); longer ones are allocated each time.
pub(crate) const LONGEST: usize = 256;

#[derive(Default)]
struct Recent {
    slots: Vec<Arc<str>>,
    next: usize,
}

thread_local! {
    static RECENT: RefCell<Recent> = RefCell::new(Recent::default());
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
        if let Some(hit) = recent.slots.iter().find(|s| ***s == *text) {
            return hit.clone();
        }
        let fresh: Arc<str> = Arc::from(text);
        if recent.slots.len() < SLOTS {
            recent.slots.push(fresh.clone());
        } else {
            let at = recent.next;
            recent.slots[at] = fresh.clone();
            recent.next = (at + 1) % SLOTS;
        }
        fresh
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
        for i in 0..SLOTS * 3 {
            let _ = shared(&format!("urn:fill:{i}"));
        }
        RECENT.with(|r| assert_eq!(r.borrow().slots.len(), SLOTS));
        // The newest are still there.
        let newest = format!("urn:fill:{}", SLOTS * 3 - 1);
        assert!(Arc::ptr_eq(&shared(&newest), &shared(&newest)));
    }
}
