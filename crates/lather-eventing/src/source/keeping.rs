//! Keeping subscription changes in the source's store: the one it was opened with (memory
//! only or the redb file), or the JetStream KV bucket shared with the other nodes (once the
//! source shares over NATS).

use super::Inner;
use crate::Subscription;
use crate::protocol::problem::{Problem, Refusal, refuse};
use crate::store::{StoreError, SubscriptionStore};

/// A change to the subscriptions, to be kept.
#[derive(Debug)]
pub(crate) enum Change {
    /// A new or renewed subscription.
    Put(Box<Subscription>),
    /// A subscription the subscriber ended (Unsubscribe).
    Remove(String),
    /// Subscriptions past their expiry.
    Expired(Vec<String>),
}

impl Inner {
    /// The store changes go to now: the shared bucket once the source shares over NATS,
    /// else the one it was opened with.
    pub(crate) fn store(&self) -> &dyn SubscriptionStore {
        match self.shared.get() {
            Some(kv) => kv.as_ref(),
            None => self.store.as_ref(),
        }
    }

    /// Refuses a change to the subscriptions while they are shared and NATS cannot be
    /// reached (or this node has not resynchronised since).
    pub(crate) fn check_shared(&self) -> Result<(), Refusal> {
        self.store().check_available().or_else(refusal)
    }

    /// Keeps `change` in the store.
    pub(crate) async fn keep(&self, change: Change) -> Result<(), Refusal> {
        let store = self.store();
        let done = match change {
            Change::Put(sub) => store.put(&sub).await,
            Change::Remove(id) => store.remove(&id).await,
            Change::Expired(ids) => store.remove_expired(ids).await,
        };
        done.or_else(refusal)
    }

    /// Forgets subscription `id` that the source itself ends; returns whether this node is
    /// the one to send its SubscriptionEnd. Shared: only if the conditional delete on the
    /// revision this node knows succeeds, so exactly one node sends it.
    pub(crate) async fn keep_end(&self, id: &str) -> bool {
        self.store().remove_ended(id).await
    }
}

/// The refusal a store failure gives a request: `SubscriptionsUnavailable` for the shared
/// store, else the source is unable to process it.
fn refusal<T>(e: StoreError) -> Result<T, Refusal> {
    let problem = if e.is_shared() {
        Problem::SharedUnavailable
    } else {
        Problem::Unable
    };
    refuse(problem, e.to_string())
}
