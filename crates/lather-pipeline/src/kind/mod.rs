//! Handler kinds: named factories that make configured handlers.
//!
//! A [`HandlerKind`] owns its settings: a typed struct read from the handler's own TOML table
//! (`[handlers.NAME]`, less the engine's options such as `kind`, `timeout_ms`, `placement`),
//! its own checks, its kind of [`Work`](crate::Work), whether it changes state outside the
//! message, and the handler it builds. A [`KindRegistry`] maps kind names to kinds; lather's
//! built-in kinds register themselves in it the same way a kind from another crate does.
//!
//! ```
//! use lather_pipeline::{Access, Handler, HandlerFuture, HandlerKind, KindRegistry, BuildEnv,
//!     Message, SettingsError, Verdict};
//! use serde::Deserialize;
//! use std::sync::Arc;
//!
//! /// Refuses messages larger than `max_bytes`.
//! struct SizeCap { max: usize }
//! impl Handler for SizeCap {
//!     fn access(&self) -> Access { Access::default() }
//!     fn call<'a>(&'a self, m: &'a Message) -> HandlerFuture<'a> {
//!         Box::pin(async move {
//!             if m.envelope().as_bytes().len() > self.max {
//!                 Verdict::Fault(lather_envelope::Fault::new(lather_envelope::FaultKind::MessageTooLarge))
//!             } else { Verdict::proceed() }
//!         })
//!     }
//! }
//!
//! #[derive(Deserialize)]
//! #[serde(deny_unknown_fields)]
//! struct SizeCapSettings { max_bytes: usize }
//!
//! struct SizeCapKind;
//! impl HandlerKind for SizeCapKind {
//!     type Settings = SizeCapSettings;
//!     fn name(&self) -> &'static str { "size-cap" }
//!     fn build(&self, s: SizeCapSettings, _: &BuildEnv<'_>) -> Result<Arc<dyn Handler>, SettingsError> {
//!         if s.max_bytes == 0 {
//!             return Err(SettingsError::key("max_bytes", "must be greater than 0"));
//!         }
//!         Ok(Arc::new(SizeCap { max: s.max_bytes }))
//!     }
//! }
//!
//! let mut kinds = KindRegistry::new();
//! kinds.register(SizeCapKind);
//! assert!(kinds.get("size-cap").is_some());
//! ```

mod env;
mod error;
mod registry;

pub use env::{BuildEnv, Resources};
pub use error::{KindError, SettingsError};
pub use registry::{DynKind, KindRegistry};

use crate::{Handler, Work};
use serde::de::DeserializeOwned;
use std::sync::Arc;

/// A kind of handler: its name, its settings and how it makes handlers.
///
/// Implement it for a unit struct (or one holding shared resources) and
/// [register](KindRegistry::register) it; configurations then use it with
/// `kind = "<name>"`.
pub trait HandlerKind: Send + Sync + 'static {
    /// The kind's settings, read from the handler's TOML table. Use
    /// `#[serde(deny_unknown_fields)]` so that a misspelt key is an error naming it.
    type Settings: DeserializeOwned;

    /// The name configurations use (`kind = "…"`): lower case, words joined by `-`.
    fn name(&self) -> &'static str;

    /// What bounds its handlers' time by default (a configuration may override it with
    /// `work = "cpu"` or `"io"`). Default: I/O.
    fn work(&self) -> Work {
        Work::Io
    }

    /// Whether its handlers change state outside the message (a store), so a second
    /// attempt could apply a change twice: such handlers are never retried. Default: no.
    fn stateful(&self) -> bool {
        false
    }

    /// Whether running one of its handlers twice for one message does no harm. A remote
    /// call of a non-idempotent handler whose worker was lost is not sent again, and one cut
    /// off by a broker outage is not run locally. Default: not stateful.
    fn idempotent(&self) -> bool {
        !self.stateful()
    }

    /// Whether its handlers may run on a remote worker (`placement = "remote"` or
    /// `"auto"`). A kind that needs something only the serving process has (an event
    /// source of that process) says no. Default: yes.
    fn remote_capable(&self) -> bool {
        true
    }

    /// Makes a handler from checked `settings`. An error names the settings key it is
    /// about when there is one ([`SettingsError::key`]), so the configuration error points
    /// at that key's line.
    fn build(
        &self,
        settings: Self::Settings,
        env: &BuildEnv<'_>,
    ) -> Result<Arc<dyn Handler>, SettingsError>;
}
