//! Keeping a node's active subscriptions in step with the shared KV bucket: a watch applies
//! every change made by any node (start or renew → the subscription and its delivery task,
//! delete → gone, without SubscriptionEnd); when the connection to NATS drops the node
//! stops accepting changes, and once it is back it resynchronises from a snapshot.

use super::{JetStreamStore, id_of};
use crate::Subscription;
use async_nats::jetstream::kv;
use futures_util::StreamExt;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Weak};
use std::time::Duration;

/// The side holding the subscriptions a node serves (the event source), kept in step with
/// the bucket.
pub(crate) trait Replica: Send + Sync + 'static {
    /// Keeps only the subscriptions whose ids are in `ids`; the others go without
    /// SubscriptionEnd (another node ended them).
    fn retain(&self, ids: &HashSet<String>);
    /// Holds `sub`, starting its delivery, or replaces the record of a held one.
    fn hold(self: &Arc<Self>, sub: Subscription);
    /// Forgets `id` without SubscriptionEnd (another node ended it).
    fn forget(&self, id: &str);
}

/// How often the connection state is looked at while watching or waiting for NATS.
pub(crate) const CHECK_EVERY: Duration = Duration::from_millis(200);

/// Makes `inner`'s active subscriptions those of a snapshot: the ones missing from it are
/// dropped (another node ended them meanwhile), the others started or updated. Marks the
/// store in sync.
pub(crate) fn reconcile<R: Replica>(
    inner: &Arc<R>,
    kv: &JetStreamStore,
    snapshot: Vec<(Subscription, u64)>,
) {
    let ids: HashSet<String> = snapshot.iter().map(|(s, _)| s.id.clone()).collect();
    inner.retain(&ids);
    let mut revisions = HashMap::with_capacity(snapshot.len());
    for (sub, revision) in snapshot {
        revisions.insert(sub.id.clone(), revision);
        inner.hold(sub);
    }
    kv.reset_revisions(revisions);
    kv.set_in_sync(true);
}

/// Applies one change from the bucket (if newer than what this node knows).
fn apply<R: Replica>(inner: &Arc<R>, kv: &JetStreamStore, entry: kv::Entry) {
    let Some(id) = id_of(&entry.key) else {
        tracing::warn!(key = entry.key, "not a subscription key: ignored");
        return;
    };
    if !kv.newer(&id, entry.revision) {
        return;
    }
    match entry.operation {
        kv::Operation::Put => match serde_json::from_slice::<Subscription>(&entry.value) {
            Ok(sub) if sub.id == id => inner.hold(sub),
            Ok(_) => tracing::warn!(key = entry.key, "subscription under another key: ignored"),
            Err(e) => tracing::warn!(key = entry.key, "unreadable subscription: {e}"),
        },
        kv::Operation::Delete | kv::Operation::Purge => {
            inner.forget(&id);
        }
    }
}

/// Follows the bucket from the sequence after `last` until the source is gone.
pub(crate) async fn follow<R: Replica>(source: Weak<R>, kv: Arc<JetStreamStore>, mut last: u64) {
    loop {
        match kv.watch_from(last + 1).await {
            Ok(watch) => {
                if watch_until_lost(&source, &kv, watch).await.is_none() {
                    return;
                }
            }
            Err(e) => tracing::warn!(bucket = kv.bucket(), "cannot watch: {e}"),
        }
        kv.set_in_sync(false);
        tracing::warn!(
            bucket = kv.bucket(),
            "subscriptions out of sync with NATS; changes refused until it is back"
        );
        // Wait for NATS, then take a fresh snapshot.
        loop {
            tokio::time::sleep(CHECK_EVERY).await;
            let Some(inner) = source.upgrade() else {
                return;
            };
            if !kv.connected() {
                continue;
            }
            match kv.snapshot().await {
                Ok((snapshot, at)) => {
                    let count = snapshot.len();
                    reconcile(&inner, &kv, snapshot);
                    last = at;
                    tracing::info!(bucket = kv.bucket(), count, "subscriptions resynchronised");
                    break;
                }
                Err(e) => tracing::warn!(bucket = kv.bucket(), "resync failed: {e}"),
            }
        }
    }
}

/// Applies the watch's changes until the connection drops or the watch fails (`Some`), or
/// until the source is gone (`None`).
async fn watch_until_lost<R: Replica>(
    source: &Weak<R>,
    kv: &JetStreamStore,
    mut watch: kv::Watch,
) -> Option<()> {
    let mut tick = tokio::time::interval(CHECK_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            entry = watch.next() => match entry {
                Some(Ok(entry)) => {
                    let inner = source.upgrade()?;
                    apply(&inner, kv, entry);
                }
                Some(Err(e)) => {
                    tracing::warn!(bucket = kv.bucket(), "watch failed: {e}");
                    return Some(());
                }
                None => return Some(()),
            },
            _ = tick.tick() => {
                source.upgrade()?;
                if !kv.connected() {
                    return Some(());
                }
            }
        }
    }
}
