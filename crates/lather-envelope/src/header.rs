//! Header blocks as the lazy parse finds them.

use crate::QName;
use std::ops::Range;

/// One header block: its name, the SOAP processing attributes, and where its bytes are.
///
/// The block's content is not parsed; read it with
/// [`Envelope::header_bytes`](crate::Envelope::header_bytes) or take it out on its own with
/// [`Envelope::extract_header`](crate::Envelope::extract_header).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeaderBlock {
    pub(crate) name: QName,
    pub(crate) must_understand: bool,
    pub(crate) role: Option<String>,
    pub(crate) relay: bool,
    pub(crate) range: Range<usize>,
    pub(crate) name_end: usize,
    pub(crate) attrs: Range<usize>,
    pub(crate) content: Range<usize>,
}

impl HeaderBlock {
    /// The block's qualified name.
    pub fn name(&self) -> &QName {
        &self.name
    }

    /// `mustUnderstand` is true (`1` or `true`).
    pub fn must_understand(&self) -> bool {
        self.must_understand
    }

    /// The targeted role (`role` in SOAP 1.2, `actor` in SOAP 1.1), unescaped; `None` means
    /// the ultimate receiver.
    pub fn role(&self) -> Option<&str> {
        self.role.as_deref()
    }

    /// SOAP 1.2 `relay="true"`: forward the block if it is not processed.
    pub fn relay(&self) -> bool {
        self.relay
    }

    /// Byte range of the whole block (start tag to end tag) in the envelope's bytes.
    pub fn range(&self) -> Range<usize> {
        self.range.clone()
    }

    /// Byte range of the block's content (between its tags; empty for `<x/>`).
    pub fn content_range(&self) -> Range<usize> {
        self.content.clone()
    }
}
