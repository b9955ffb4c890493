//! Where a server's QoS offers are registered (`[qos] broker`).

use std::time::Duration;

/// The broker and how often the offers go to it again.
#[derive(Debug, Clone)]
pub(crate) struct OfferBroker {
    /// The broker's URL.
    pub(crate) url: String,
    /// How often offers are registered again.
    pub(crate) refresh: Duration,
}
