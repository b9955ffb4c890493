//! The reference header a compacted message carries: a `wsctx:context` block naming the
//! context by URI, with the digest of the blocks it stands for, marked mustUnderstand so a
//! receiver that cannot expand it faults instead of reading a message without its headers.

use crate::protocol::{NS, WSCTX_NS};
use lather_envelope::escape::escape_text;
use lather_envelope::{Element, Envelope, Limits, QName, SoapVersion};

/// The reference header's local name (in [`WSCTX_NS`]).
pub const REFERENCE_LOCAL: &str = "context";

/// What a reference header says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reference {
    /// The context's URI.
    pub uri: String,
    /// The SHA-256 (hexadecimal) of the blocks it stands for, as stored.
    pub digest: String,
}

impl Reference {
    /// The header block's name.
    pub fn name() -> QName {
        QName::new(WSCTX_NS, REFERENCE_LOCAL)
    }

    /// The header block in `version`.
    pub fn to_block(&self, version: SoapVersion) -> String {
        format!(
            "<c:context xmlns:c=\"{WSCTX_NS}\" xmlns:e=\"{}\" xmlns:l=\"{NS}\" e:mustUnderstand=\"1\" l:digest=\"{}\"><c:context-identifier>{}</c:context-identifier></c:context>",
            version.namespace(),
            escape_text(&self.digest),
            escape_text(&self.uri)
        )
    }

    /// The reference in `envelope`, if it carries one; `Err` with the reason when the
    /// block is there but says no URI or digest.
    pub fn find(envelope: &Envelope, limits: &Limits) -> Option<Result<Reference, String>> {
        let block = envelope.header(&Reference::name())?;
        let bytes = envelope.extract_header(block);
        let element = match Element::parse(&bytes, limits) {
            Ok(e) => e,
            Err(f) => return Some(Err(f.reason().to_owned())),
        };
        let uri = element
            .elements()
            .find(|e| e.name().local() == "context-identifier")
            .map(|e| e.text().trim().to_owned())
            .filter(|u| !u.is_empty());
        let digest = element
            .attribute(&QName::new(NS, "digest"))
            .map(str::to_owned);
        Some(match (uri, digest) {
            (Some(uri), Some(digest)) => Ok(Reference { uri, digest }),
            (None, _) => Err("the wsctx:context header names no context-identifier".to_owned()),
            (Some(uri), None) => Err(format!(
                "the wsctx:context header for {uri} carries no l:digest (urn:lather:context): lather cannot check what it stands for"
            )),
        })
    }
}
