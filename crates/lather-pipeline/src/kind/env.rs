//! What a kind gets besides its settings when it makes a handler.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// Shared things of the process that kinds may need, by type: e.g. the event sources a
/// `publish` handler hands events to. The host puts them in; a kind takes what it knows.
#[derive(Clone, Default)]
pub struct Resources {
    by_type: HashMap<TypeId, Arc<dyn Any + Send + Sync>>,
}

impl Resources {
    /// No resources.
    pub fn new() -> Self {
        Resources::default()
    }

    /// Adds `value` (replacing one of the same type).
    pub fn insert<T: Any + Send + Sync>(&mut self, value: T) {
        self.by_type.insert(TypeId::of::<T>(), Arc::new(value));
    }

    /// The resource of type `T`, if one was added.
    pub fn get<T: Any + Send + Sync>(&self) -> Option<&T> {
        self.by_type
            .get(&TypeId::of::<T>())
            .and_then(|v| v.downcast_ref::<T>())
    }
}

impl fmt::Debug for Resources {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Resources")
            .field("count", &self.by_type.len())
            .finish()
    }
}

/// The context of one handler being made.
#[derive(Debug, Clone, Copy)]
pub struct BuildEnv<'a> {
    /// The handler's name in the configuration (`[handlers.NAME]`), for messages and logs.
    pub handler: &'a str,
    /// The time allowed per attempt (`timeout_ms`), for kinds that wait on something.
    pub timeout: Duration,
    /// The services of this process that are of a built-in kind, as `(name, builtin)`
    /// pairs (e.g. `("events", "event-source")`), so a kind can check a reference to one.
    pub services: &'a [(String, String)],
    /// Shared things of the process.
    pub resources: &'a Resources,
}

impl<'a> BuildEnv<'a> {
    /// An environment with no services and no resources (tests, tools).
    pub fn bare(handler: &'a str, resources: &'a Resources) -> Self {
        BuildEnv {
            handler,
            timeout: crate::Options::default().timeout,
            services: &[],
            resources,
        }
    }
}
