//! The information service (FTHPIS's half of seed 002): services register a name, an
//! endpoint, a version and metadata — name/value properties and XML documents — under a
//! lease that ends unless renewed; clients query by name, by properties and by an XPath 1.0
//! expression over the documents (`builtin = "registry"`, see docs/context.md).
//!
//! Registrations are soft state: kept in memory, each renewed by its service, gone when its
//! lease ends.

mod book;
mod client;
mod protocol;
mod service;

pub use book::{Query, RegisterRequest, Registration, Registry, RegistryError, RegistryLimits};
pub use client::{QueryError, RegistryClient};
pub use service::RegistryService;

/// The registry's namespace.
pub const NS: &str = "urn:lather:registry";
