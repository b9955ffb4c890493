//! Event sources a `publish` handler hands events to, in the same process.
//!
//! The handlers are built from the configuration before the host opens its event sources,
//! so the handler holds the shared [`EventSinks`] registry and looks its source up by name
//! at each message; the host registers each event source as it opens it.

use lather_envelope::Fault;
use std::collections::HashMap;
use std::sync::{Arc, PoisonError, RwLock};

/// Something that takes events the way an event source's `{path}/publish` does.
pub trait EventSink: Send + Sync + std::fmt::Debug {
    /// Publishes `event` (one standalone XML element) with `topics` (the event's root
    /// element name as `{namespace}local` first, then any named topics) to every
    /// subscription that wants it; `action` is the notifications' `wsa:Action` (the sink's
    /// default when `None`). Returns how many notifications were queued.
    fn publish(
        &self,
        event: &[u8],
        topics: &[String],
        action: Option<&str>,
    ) -> Result<usize, Fault>;
}

/// The event sinks of a process, by service name. Cheap to clone; every clone sees the
/// sinks registered through any of them. Empty where no event source runs (`lather check`,
/// `lather worker`).
#[derive(Debug, Clone, Default)]
pub struct EventSinks {
    by_name: Arc<RwLock<HashMap<String, Arc<dyn EventSink>>>>,
}

impl EventSinks {
    /// Makes `sink` the one named `name` (replacing any before it).
    pub fn register(&self, name: &str, sink: Arc<dyn EventSink>) {
        self.by_name
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(name.to_owned(), sink);
    }

    /// The sink named `name`, if one is registered.
    pub fn get(&self, name: &str) -> Option<Arc<dyn EventSink>> {
        self.by_name
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(name)
            .cloned()
    }
}
