//! `[server] server_timing`: when answers carry a `Server-Timing` header.

use serde::Deserialize;

/// When an answer carries the `Server-Timing` header of its request's phases.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ServerTiming {
    /// Never.
    Off,
    /// When the request carries a `Lather-Timing` header and comes from an address
    /// `admin_allow` lets read `/metrics` (the default).
    #[default]
    OnRequest,
    /// On every answer.
    Always,
}
