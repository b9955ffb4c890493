//! An event as published, and the stamped form every sink's delivery task renders from.

use bytes::Bytes;
use lather_envelope::escape::escape_text;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
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

/// An event stamped by the source: shared (behind an `Arc`) by every queue it goes to, so
/// publishing costs one allocation per event, not per subscriber.
#[derive(Debug)]
pub(crate) struct Stamped {
    /// Increasing per process.
    pub(crate) seq: u64,
    /// When it was published, Unix nanoseconds.
    pub(crate) published_ns: u64,
    pub(crate) action: String,
    /// `action` escaped for XML text, once.
    pub(crate) action_xml: String,
    /// The event's topics (root element's name first, by convention); the binary frame
    /// carries the first, WS-BaseNotification's Notify shows one.
    pub(crate) topics: Vec<String>,
    pub(crate) payload: Bytes,
    pub(crate) headers: Vec<EventHeader>,
    /// The headers as XML, once.
    pub(crate) headers_xml: String,
    /// Counts the event's bytes in its source's queued bytes while it lives.
    _charge: Option<crate::gauges::Charge>,
}

static SEQUENCE: AtomicU64 = AtomicU64::new(1);

/// Unix nanoseconds now.
pub fn unix_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

impl Stamped {
    /// Stamps `event` with the next sequence number and the time now; its bytes
    /// ([`Stamped::size`]) count in `gauges` until the last queue lets it go.
    pub(crate) fn new(
        event: Event,
        action: String,
        gauges: Option<&Arc<crate::gauges::Gauges>>,
    ) -> Arc<Stamped> {
        let headers_xml: String = event.headers.iter().map(EventHeader::to_xml).collect();
        let size = size_of(&event.payload, &headers_xml, &action);
        Arc::new(Stamped {
            _charge: gauges.map(|g| g.charge(size)),
            seq: SEQUENCE.fetch_add(1, Ordering::Relaxed),
            published_ns: unix_ns(),
            action_xml: escape_text(&action).into_owned(),
            action,
            topics: event.topics,
            payload: event.payload,
            headers: event.headers,
            headers_xml,
        })
    }

    /// The bytes this event holds: payload, headers and action (what the byte bounds
    /// count; a notification adds a few hundred bytes of envelope per sink).
    pub(crate) fn size(&self) -> u64 {
        size_of(&self.payload, &self.headers_xml, &self.action)
    }
}

fn size_of(payload: &[u8], headers_xml: &str, action: &str) -> u64 {
    (payload.len() + headers_xml.len() + action.len()) as u64
}
