//! An event stamped by the source: the form every sink's delivery task renders from.

use crate::delivery::gauges::{Charge, Gauges};
use crate::protocol::event::{Event, EventHeader, unix_ns};
use bytes::Bytes;
use lather_envelope::escape::escape_text;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

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
    /// The text every SOAP notification of this event has in common from its stamp's
    /// `seq` value to the start of its Body: made once, by the first SOAP sink that
    /// renders the event (`super::binding::soap`), and copied by every other.
    pub(crate) soap_stamp: OnceLock<String>,
    /// Counts the event's bytes in its source's queued bytes while it lives.
    _charge: Option<Charge>,
}

static SEQUENCE: AtomicU64 = AtomicU64::new(1);

impl Stamped {
    /// Stamps `event` with the next sequence number and the time now; its bytes
    /// ([`Stamped::size`]) count in `gauges` until the last queue lets it go.
    pub(crate) fn new(event: Event, action: String, gauges: Option<&Arc<Gauges>>) -> Arc<Stamped> {
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
            soap_stamp: OnceLock::new(),
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
