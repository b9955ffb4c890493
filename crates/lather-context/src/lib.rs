//! lather's WS-Context store: the parts of SOAP messages that repeat in every message of a
//! conversation (WS-Addressing headers above all) are kept once, as a *context* named by a
//! URI, and messages carry a reference instead (seed 002, HHFR).
//!
//! - [`StoredContext`]: one context — its XML contents, version, owner, reader policy and
//!   expiry.
//! - [`ContextStore`]: where contexts live, behind one small trait: memory
//!   ([`MemoryStore`]) or a redb file ([`RedbStore`]).
//! - [`Contexts`]: the store's rules — minted URIs, owner tokens, expiry, size and count
//!   bounds, versions — independent of SOAP.
//! - [`ContextStoreService`]: the rules as a SOAP service (`builtin = "context-store"`);
//!   the messages are in [`protocol`] and described in `docs/context.md`.
//! - [`compaction`]: the `context-compact` / `context-expand` handler pair.
//! - [`registry`]: the information service where services register under a lease
//!   (`builtin = "registry"`).
//! - [`stream`]: negotiated message streams, each message shape sent once and each
//!   message as its values.

mod client;
pub mod compaction;
mod contexts;
mod mint;
pub mod protocol;
mod record;
pub mod registry;
mod service;
pub mod store;
pub mod stream;

pub use client::{RemoteContext, StoreCallError, StoreClient};
pub use compaction::{CompactKind, ExpandKind};
pub use contexts::{ContextError, Contexts, Credentials, NewContext, StoreLimits, Written};
pub use record::{Owner, Readers, StoredContext, contents_digest};
pub use registry::{Registry, RegistryLimits, RegistryService};
pub use service::ContextStoreService;
pub use store::{
    ContextStore, DeferredStore, JetStreamStore, MemoryStore, PutOutcome, RedbStore, StoreError,
};
