//! Each event source of the process as an [`EventSink`] for the `publish` handlers.

use bytes::Bytes;
use lather_envelope::Fault;
use lather_eventing::{Event, EventSource};
use lather_handlers::EventSink;

/// An event source taking events from `publish` handlers in process.
#[derive(Debug)]
pub(crate) struct SourceSink(pub(crate) EventSource);

impl EventSink for SourceSink {
    fn publish(
        &self,
        event: &[u8],
        topics: &[String],
        action: Option<&str>,
    ) -> Result<usize, Fault> {
        // Refused with PublishQueueFull when the source's byte bound is reached.
        self.0.try_publish_event(Event {
            payload: Bytes::copy_from_slice(event),
            action: action.map(str::to_owned),
            topics: topics.to_vec(),
            headers: Vec::new(),
        })
    }
}
