//! `subscriptions = "nats" | "local"`: where an event source keeps its subscriptions.

use serde::Deserialize;

/// `subscriptions = "nats"` (the default when `[nats]` exists) keeps an event source's
/// subscriptions in a JetStream KV bucket shared by every node of the service;
/// `"local"` keeps them in the process (and its `store` file, if any).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SubscriptionsMode {
    /// In a JetStream KV bucket on the `[nats]` server.
    Nats,
    /// In the process (memory, or the redb file of `store`).
    Local,
}
