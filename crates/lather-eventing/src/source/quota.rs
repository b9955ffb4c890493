//! The subscription caps: most subscriptions held at once, and most per subscriber
//! identity. Admission reserves a slot under the source's lock, so concurrent Subscribes
//! never get more than the cap between them.

use std::collections::HashMap;
use std::sync::Weak;

/// Subscriptions admitted and not yet held, in total and per identity.
#[derive(Debug, Default)]
pub(crate) struct Reserved {
    total: usize,
    by_identity: HashMap<String, usize>,
}

/// Why a subscription is not admitted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Full {
    /// The source holds its maximum.
    Source(usize),
    /// The identity holds its maximum.
    Identity(usize),
}

impl std::fmt::Display for Full {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Full::Source(max) => write!(f, "the source holds {max} subscriptions, its maximum"),
            Full::Identity(max) => write!(
                f,
                "this subscriber holds {max} subscriptions, the most one subscriber may hold (service key max_subscriptions_per_identity)"
            ),
        }
    }
}

impl Reserved {
    /// Reserves a slot for `identity` if `held` (held now) plus the reservations stay
    /// under `max`, and `held_by(identity)` plus its reservations under `per_identity`.
    pub(crate) fn admit(
        &mut self,
        held: usize,
        identity: Option<&str>,
        held_by: impl Fn(&str) -> usize,
        max: usize,
        per_identity: usize,
    ) -> Result<(), Full> {
        if held.saturating_add(self.total) >= max {
            return Err(Full::Source(max));
        }
        if let Some(who) = identity {
            let pending = self.by_identity.get(who).copied().unwrap_or(0);
            if held_by(who).saturating_add(pending) >= per_identity {
                return Err(Full::Identity(per_identity));
            }
            *self.by_identity.entry(who.to_owned()).or_insert(0) += 1;
        }
        self.total += 1;
        Ok(())
    }

    /// Gives back a slot of `identity`.
    pub(crate) fn release(&mut self, identity: Option<&str>) {
        self.total = self.total.saturating_sub(1);
        if let Some(who) = identity
            && let Some(n) = self.by_identity.get_mut(who)
        {
            *n = n.saturating_sub(1);
            if *n == 0 {
                self.by_identity.remove(who);
            }
        }
    }
}

/// A reserved slot; given back when dropped.
#[derive(Debug)]
pub(crate) struct Slot {
    source: Weak<super::Inner>,
    identity: Option<String>,
}

impl Slot {
    pub(crate) fn new(source: Weak<super::Inner>, identity: Option<&str>) -> Slot {
        Slot {
            source,
            identity: identity.map(str::to_owned),
        }
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        if let Some(source) = self.source.upgrade() {
            source.release(self.identity.as_deref());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caps_count_held_and_reserved() {
        let mut r = Reserved::default();
        let none = |_: &str| 0;
        assert!(r.admit(1, Some("a"), none, 3, 2).is_ok());
        assert!(r.admit(1, Some("a"), none, 3, 2).is_ok());
        assert_eq!(r.admit(0, Some("a"), none, 9, 2), Err(Full::Identity(2)));
        assert_eq!(r.admit(1, Some("b"), none, 3, 2), Err(Full::Source(3)));
        r.release(Some("a"));
        assert!(r.admit(1, Some("b"), |_| 1, 3, 2).is_ok());
        assert_eq!(r.admit(0, Some("c"), |_| 2, 9, 2), Err(Full::Identity(2)));
    }
}
