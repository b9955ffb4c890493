//! Where subscription changes are kept: nowhere (memory only), the redb file, or the
//! JetStream KV bucket shared with the other nodes (once the source shares over NATS).

use crate::Subscription;
use crate::problem::{Problem, Refusal, refuse};
use crate::source::Inner;

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
    /// Refuses a change to the subscriptions while they are shared and NATS cannot be
    /// reached (or this node has not resynchronised since).
    pub(crate) fn check_shared(&self) -> Result<(), Refusal> {
        match self.shared.get() {
            Some(kv) if !kv.available() => refuse(
                Problem::SharedUnavailable,
                format!(
                    "the subscriptions live in NATS JetStream KV (bucket {}) and NATS cannot be reached now; try again later",
                    kv.bucket()
                ),
            ),
            _ => Ok(()),
        }
    }

    /// Keeps `change`: in the shared bucket, else in the redb file (on a blocking thread),
    /// else nowhere.
    pub(crate) async fn keep(&self, change: Change) -> Result<(), Refusal> {
        if let Some(kv) = self.shared.get() {
            let done = match change {
                Change::Put(sub) => kv.put(&sub).await.map(|_| ()),
                Change::Remove(id) => kv.remove(&id).await,
                Change::Expired(ids) => {
                    // Every node sweeps; whichever deletes first wins, the rest find the
                    // revision changed.
                    for id in ids {
                        kv.remove_if_unchanged(&id).await;
                    }
                    Ok(())
                }
            };
            return done.or_else(|e| refuse(Problem::SharedUnavailable, e));
        }
        let Some(store) = self.store.clone() else {
            return Ok(());
        };
        let job = move || match change {
            Change::Put(sub) => store.put(&sub),
            Change::Remove(id) => store.remove(&id),
            Change::Expired(ids) => ids.iter().try_for_each(|id| store.remove(id)),
        };
        match tokio::task::spawn_blocking(job).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => refuse(Problem::Unable, format!("subscription store: {e}")),
            Err(e) => refuse(Problem::Unable, format!("subscription store task: {e}")),
        }
    }

    /// Forgets subscription `id` that the source itself ends; returns whether this node is
    /// the one to send its SubscriptionEnd. Shared: only if the conditional delete on the
    /// revision this node knows succeeds, so exactly one node sends it.
    pub(crate) async fn keep_end(&self, id: &str) -> bool {
        if let Some(kv) = self.shared.get() {
            return kv.remove_if_unchanged(id).await;
        }
        if let Err(e) = self.keep(Change::Remove(id.to_owned())).await {
            tracing::warn!(
                subscription = id,
                "could not remove it from the store: {}",
                e.reason
            );
        }
        true
    }
}
