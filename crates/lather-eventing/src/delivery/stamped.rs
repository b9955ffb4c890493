//! An event stamped by the source: the form every sink's delivery task renders from.

use crate::delivery::gauges::{Charge, Gauges};
use crate::protocol::event::{Event, EventHeader, unix_ns};
use bytes::Bytes;
use lather_envelope::escape::escape_text;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

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
    /// What every WS-Eventing notification of this event (rendered by
    /// `super::binding::soap`'s template; WS-BaseNotification ones are built whole) has
    /// from its stamp's `seq` value to the start of its Body: `{seq}" published="{ns}"/>`,
    /// the headers as XML, `</s:Header><s:Body>` (the `s` prefix the template declares).
    /// Made once per event, copied into each notification; counted in its size.
    pub(crate) soap_stamp: String,
    /// Counts the event's bytes in its source's queued bytes while it lives.
    _charge: Option<Charge>,
}

static SEQUENCE: AtomicU64 = AtomicU64::new(1);

impl Stamped {
    /// Stamps `event` with the next sequence number and the time now; its bytes
    /// ([`Stamped::size`]) count in `gauges` until the last queue lets it go.
    pub(crate) fn new(event: Event, action: String, gauges: Option<&Arc<Gauges>>) -> Arc<Stamped> {
        let seq = SEQUENCE.fetch_add(1, Ordering::Relaxed);
        let published_ns = unix_ns();
        let soap_stamp = soap_stamp(seq, published_ns, &event.headers);
        let size = size_of(&event.payload, &soap_stamp, &action);
        Arc::new(Stamped {
            _charge: gauges.map(|g| g.charge(size)),
            seq,
            published_ns,
            action_xml: escape_text(&action).into_owned(),
            action,
            topics: event.topics,
            payload: event.payload,
            headers: event.headers,
            soap_stamp,
        })
    }

    /// The bytes this event holds: payload, stamp and headers, and action (what the byte
    /// bounds count; a notification adds a few hundred bytes of envelope per sink).
    pub(crate) fn size(&self) -> u64 {
        size_of(&self.payload, &self.soap_stamp, &self.action)
    }
}

fn size_of(payload: &[u8], soap_stamp: &str, action: &str) -> u64 {
    (payload.len() + soap_stamp.len() + action.len()) as u64
}

/// [`Stamped::soap_stamp`] of the event `seq` published at `published_ns` with `headers`.
fn soap_stamp(seq: u64, published_ns: u64, headers: &[EventHeader]) -> String {
    const BODY: &str = "</s:Header><s:Body>";
    let mut digits = itoa::Buffer::new();
    // Two numbers of at most 20 digits and 16 bytes of markup between and after them.
    let mut text = String::with_capacity(56 + BODY.len());
    text.push_str(digits.format(seq));
    text.push_str(r#"" published=""#);
    text.push_str(digits.format(published_ns));
    text.push_str(r#""/>"#);
    for header in headers {
        header.write_xml(&mut text);
    }
    text.push_str(BODY);
    text
}
