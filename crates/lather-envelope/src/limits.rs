//! Bounds applied while parsing, so hostile input costs bounded time and memory.

/// Limits checked by [`Envelope::parse`](crate::Envelope::parse).
///
/// Every limit that is exceeded yields its own [`Fault`](crate::Fault), so a client learns
/// which bound it crossed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest accepted message, in bytes (after any content decoding).
    pub max_message_bytes: usize,
    /// Deepest element nesting accepted; the Envelope element is depth 1.
    pub max_depth: usize,
    /// Most attributes (namespace declarations included) on one element.
    pub max_attributes: usize,
}

impl Limits {
    /// Default largest message: 4 MiB.
    pub const DEFAULT_MAX_MESSAGE_BYTES: usize = 4 * 1024 * 1024;
    /// Default deepest nesting: 64 elements.
    pub const DEFAULT_MAX_DEPTH: usize = 64;
    /// Default most attributes per element: 64.
    pub const DEFAULT_MAX_ATTRIBUTES: usize = 64;
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_message_bytes: Self::DEFAULT_MAX_MESSAGE_BYTES,
            max_depth: Self::DEFAULT_MAX_DEPTH,
            max_attributes: Self::DEFAULT_MAX_ATTRIBUTES,
        }
    }
}
