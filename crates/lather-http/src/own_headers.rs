//! Request headers addressed to lather itself, never forwarded by a gateway: they ask this
//! server (its admission class, its `Server-Timing`), not the backend.

/// The request header naming the priority class: `high`, `normal` (default) or `low`.
pub(crate) const PRIORITY_HEADER: &str = "lather-priority";

/// Every request header lather reads for itself.
pub(crate) const OWN_HEADERS: [&str; 2] = [PRIORITY_HEADER, crate::timing::ASK_HEADER];
