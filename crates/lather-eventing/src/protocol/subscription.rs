//! A subscription as the source keeps it (and stores it).

use crate::Version;
use serde::{Deserialize, Serialize};

/// An endpoint reference the source sends to: its address and reference parameters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Endpoint {
    /// The `wsa:Address` (`http://…`, `soap.tcp://host:port` or `lather.bin://host:port`).
    pub address: String,
    /// Each reference parameter as a standalone element; echoed as header blocks.
    pub params: Vec<String>,
}

/// One subscription.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Subscription {
    /// The identifier in the manager EPR (`urn:uuid:…`).
    pub id: String,
    /// The version it was made in; its notifications and SubscriptionEnd speak it.
    pub version: Version,
    /// Whether the subscriber spoke SOAP 1.2 (else 1.1); notifications use the same.
    pub soap12: bool,
    /// Where notifications go.
    pub notify_to: Endpoint,
    /// Where SubscriptionEnd goes, if anywhere.
    pub end_to: Option<Endpoint>,
    /// The subscription manager's address (for the SubscriptionEnd of 2004/08).
    pub manager: String,
    /// When it expires, in Unix milliseconds.
    pub expires_ms: u64,
    /// Topics it wants (Clark names or strings); empty = every event.
    pub topics: Vec<String>,
    /// Notification actions it wants (DPWS action filter); empty = every action.
    #[serde(default)]
    pub actions: Vec<String>,
    /// The XPath 1.0 expression events must satisfy, if its Filter was XPath (compiled
    /// again when the source loads the subscription).
    #[serde(default)]
    pub xpath: Option<String>,
    /// The `(prefix, uri)` pairs the XPath expression's prefixes resolve in.
    #[serde(default)]
    pub xpath_namespaces: Vec<(String, String)>,
    /// Whether its notifications are sent gzip-compressed (from the source's
    /// `compress_min_bytes` on).
    #[serde(default)]
    pub gzip: bool,
    /// What a WS-BaseNotification subscription asked for; `None` for WS-Eventing ones.
    #[serde(default)]
    pub wsn: Option<crate::protocol::wsn::WsnTerms>,
    /// 2011: whether its notifications go in the Wrap format (`wse:Notify@actionURI`, see
    /// [`crate::WRAP_FORMAT`]); else Unwrap.
    #[serde(default)]
    pub wrapped: bool,
    /// The subscriber identity that made it (the wsse identity once known, else the
    /// client's address), for the per-identity quota; `None` if unknown.
    #[serde(default)]
    pub owner: Option<String>,
}

impl Subscription {
    /// Whether an event with these topics is for this subscription.
    pub fn wants(&self, event_topics: &[String]) -> bool {
        if let Some(terms) = &self.wsn {
            return terms.wants(event_topics);
        }
        self.topics.is_empty() || self.topics.iter().any(|t| event_topics.contains(t))
    }

    /// Whether a notification with `action` is for this subscription (its action filter).
    pub fn wants_action(&self, action: &str) -> bool {
        self.actions.is_empty()
            || self
                .actions
                .iter()
                .any(|f| crate::protocol::action_filter::matches(f, action))
    }
}

/// A fresh `urn:uuid:` (version 4).
pub(crate) fn new_uuid() -> String {
    let mut b = [0u8; 16];
    // A failing system RNG leaves zeros; the counter keeps ids distinct in that case.
    if getrandom::fill(&mut b).is_err() {
        use std::sync::atomic::{AtomicU64, Ordering};
        static COUNTER: AtomicU64 = AtomicU64::new(1);
        b[..8].copy_from_slice(&COUNTER.fetch_add(1, Ordering::Relaxed).to_be_bytes());
    }
    lather_envelope::uuid::urn_uuid_v4(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subscriptions_stored_before_filters_and_compression_still_load() {
        let old = r#"{"id":"urn:uuid:1","version":"Rec2011","soap12":true,"notify_to":{"address":"http://s/","params":[]},"end_to":null,"manager":"http://m/","expires_ms":5,"topics":["a"]}"#;
        let sub: Subscription = serde_json::from_str(old).unwrap();
        assert_eq!(sub.xpath, None);
        assert!(sub.xpath_namespaces.is_empty());
        assert!(!sub.gzip);
        assert!(!sub.wrapped);
        assert_eq!(sub.topics, ["a"]);
    }
}
