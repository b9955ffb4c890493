//! Kinds by name.

use super::{BuildEnv, HandlerKind, KindError};
use crate::{Handler, Work};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

/// A [`HandlerKind`] with its settings type erased, as the registry holds it.
pub trait DynKind: Send + Sync {
    /// The kind's name.
    fn name(&self) -> &'static str;
    /// Its default kind of work.
    fn work(&self) -> Work;
    /// Whether it changes state outside the message.
    fn stateful(&self) -> bool;
    /// Whether running it twice for one message does no harm.
    fn idempotent(&self) -> bool;
    /// Whether it may run on a remote worker.
    fn remote_capable(&self) -> bool;
    /// Reads the settings from `table` (a TOML table, with spans into the configuration's
    /// text) and makes the handler.
    fn build_from(
        &self,
        table: toml::de::Deserializer<'_>,
        env: &BuildEnv<'_>,
    ) -> Result<Arc<dyn Handler>, KindError>;
}

impl<K: HandlerKind> DynKind for K {
    fn name(&self) -> &'static str {
        HandlerKind::name(self)
    }

    fn work(&self) -> Work {
        HandlerKind::work(self)
    }

    fn stateful(&self) -> bool {
        HandlerKind::stateful(self)
    }

    fn idempotent(&self) -> bool {
        HandlerKind::idempotent(self)
    }

    fn remote_capable(&self) -> bool {
        HandlerKind::remote_capable(self)
    }

    fn build_from(
        &self,
        table: toml::de::Deserializer<'_>,
        env: &BuildEnv<'_>,
    ) -> Result<Arc<dyn Handler>, KindError> {
        let settings = K::Settings::deserialize(table).map_err(|e| KindError::Shape {
            message: e.message().to_owned(),
            span: e.span(),
        })?;
        Ok(self.build(settings, env)?)
    }
}

/// Handler kinds by name.
#[derive(Clone, Default)]
pub struct KindRegistry {
    kinds: BTreeMap<&'static str, Arc<dyn DynKind>>,
}

impl KindRegistry {
    /// A registry with no kinds.
    pub fn new() -> Self {
        KindRegistry::default()
    }

    /// Adds `kind` under its name, replacing a kind of the same name.
    pub fn register<K: HandlerKind>(&mut self, kind: K) -> &mut Self {
        self.kinds.insert(HandlerKind::name(&kind), Arc::new(kind));
        self
    }

    /// The kind named `name`.
    pub fn get(&self, name: &str) -> Option<&dyn DynKind> {
        self.kinds.get(name).map(|k| &**k)
    }

    /// The names of the registered kinds, in order.
    pub fn names(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.kinds.keys().copied()
    }
}

impl fmt::Debug for KindRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.kinds.keys()).finish()
    }
}
