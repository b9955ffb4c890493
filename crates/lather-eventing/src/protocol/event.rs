//! An event as published (stamped for delivery in `crate::delivery::stamped`).

use bytes::Bytes;
use lather_envelope::escape::escape_text;
use std::time::{SystemTime, UNIX_EPOCH};

/// One event to publish with [`crate::EventSource::publish_event`].
#[derive(Debug, Clone, Default)]
pub struct Event {
    /// The event: one standalone XML element (the notification's Body content).
    pub payload: Bytes,
    /// The notifications' `wsa:Action`; the source's default when `None`.
    pub action: Option<String>,
    /// The event's topics (`{namespace}local` or plain strings), matched against filters.
    pub topics: Vec<String>,
    /// Extra header blocks every notification of this event carries (e.g. an
    /// authentication or a reference-data header).
    pub headers: Vec<EventHeader>,
}

/// A simple header block: an element with text content and no attributes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventHeader {
    /// The element's namespace.
    pub namespace: String,
    /// The element's local name.
    pub local: String,
    /// Its text.
    pub text: String,
}

impl EventHeader {
    /// The header as an XML element (`<h:local xmlns:h="namespace">text</h:local>`).
    pub fn to_xml(&self) -> String {
        format!(
            r#"<h:{local} xmlns:h="{ns}">{text}</h:{local}>"#,
            local = self.local,
            ns = lather_envelope::escape::escape_attribute(&self.namespace),
            text = escape_text(&self.text)
        )
    }

    /// The Clark name `{namespace}local`.
    pub fn clark(&self) -> String {
        format!("{{{}}}{}", self.namespace, self.local)
    }
}

/// Unix nanoseconds now.
pub fn unix_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}
