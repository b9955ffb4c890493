//! Request headers addressed to lather itself, never forwarded by a gateway: they ask this
//! server (its admission class, its `Server-Timing`), not the backend.

use http::HeaderName;

/// The request header naming the priority class: `high`, `normal` (default) or `low`.
/// A `HeaderName`, so a lookup neither parses nor lower-cases it.
pub(crate) const PRIORITY_HEADER: HeaderName = HeaderName::from_static("lather-priority");

/// Every request header lather reads for itself.
pub(crate) const OWN_HEADERS: [HeaderName; 2] = [PRIORITY_HEADER, crate::timing::ASK_HEADER];
