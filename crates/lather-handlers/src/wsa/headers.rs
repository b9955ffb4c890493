//! Reading the message addressing headers of an envelope.

use super::version::WsaVersion;
use lather_envelope::{Element, Envelope, HeaderBlock, Limits, QName};

/// The message addressing properties' header names, the same in both versions.
pub(crate) const PROPERTIES: [&str; 7] = [
    "To",
    "From",
    "ReplyTo",
    "FaultTo",
    "Action",
    "MessageID",
    "RelatesTo",
];

/// The headers that hold an endpoint reference (with an `Address` child).
pub(crate) const ENDPOINT_REFERENCES: [&str; 3] = ["From", "ReplyTo", "FaultTo"];

/// The addressing headers of one envelope, all of one version.
#[derive(Debug)]
pub(crate) struct AddressingHeaders<'e> {
    version: WsaVersion,
    envelope: &'e Envelope,
    blocks: Vec<&'e HeaderBlock>,
}

/// An envelope whose addressing headers come from both versions.
#[derive(Debug)]
pub(crate) struct Mixed {
    /// The version of the first addressing header.
    pub(crate) first: WsaVersion,
    /// The first header of the other version.
    pub(crate) other: QName,
}

/// Why an endpoint reference header is not usable.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum EprError {
    /// It does not parse as an element.
    Malformed(String),
    /// It has no `Address` child with text.
    NoAddress,
}

impl<'e> AddressingHeaders<'e> {
    /// The addressing headers of `envelope`: `None` when it has none, `Err` when it mixes
    /// the versions. The version is that of the first addressing header.
    pub(crate) fn read(envelope: &'e Envelope) -> Result<Option<Self>, Mixed> {
        let mut version = None;
        let mut blocks = Vec::new();
        for block in envelope.headers() {
            let name = block.name();
            let Some(v) = WsaVersion::from_namespace(name.namespace()) else {
                continue;
            };
            if !PROPERTIES.contains(&name.local()) {
                continue;
            }
            match version {
                None => version = Some(v),
                Some(first) if first != v => {
                    return Err(Mixed {
                        first,
                        other: name.clone(),
                    });
                }
                Some(_) => {}
            }
            blocks.push(block);
        }
        Ok(version.map(|version| AddressingHeaders {
            version,
            envelope,
            blocks,
        }))
    }

    /// The version the headers are in.
    pub(crate) fn version(&self) -> WsaVersion {
        self.version
    }

    /// Every header named `local`, in document order.
    pub(crate) fn all<'s>(&'s self, local: &'s str) -> impl Iterator<Item = &'e HeaderBlock> + 's {
        self.blocks
            .iter()
            .copied()
            .filter(move |b| b.name().local() == local)
    }

    /// The first header named `local`.
    pub(crate) fn first(&self, local: &str) -> Option<&'e HeaderBlock> {
        self.all(local).next()
    }

    /// The header's text, trimmed: `None` if absent, `Some(None)` if it holds elements.
    pub(crate) fn text(&self, local: &str) -> Option<Option<String>> {
        self.first(local).map(|b| self.envelope.header_text(b))
    }

    /// The `Address` of the first endpoint reference header named `local`, if present.
    pub(crate) fn address(&self, local: &str) -> Option<Result<String, EprError>> {
        let block = self.first(local)?;
        let bytes = self.envelope.extract_header(block);
        let epr = match Element::parse(&bytes, &Limits::default()) {
            Ok(epr) => epr,
            Err(fault) => return Some(Err(EprError::Malformed(fault.reason().to_owned()))),
        };
        let address = epr
            .child(&self.version.name("Address"))
            .map(|a| a.text().trim_matches([' ', '\t', '\r', '\n']).to_owned())
            .filter(|a| !a.is_empty());
        Some(address.ok_or(EprError::NoAddress))
    }

    /// The `RelationshipType` of a `RelatesTo` header, or the version's default (reply).
    pub(crate) fn relationship(&self, block: &HeaderBlock) -> String {
        let bytes = self.envelope.extract_header(block);
        let given = Element::parse(&bytes, &Limits::default())
            .ok()
            .and_then(|e| {
                e.attribute(&QName::new("", "RelationshipType"))
                    .map(str::to_owned)
            });
        given.unwrap_or_else(|| match self.version {
            WsaVersion::V10 => format!("{}/reply", self.version.namespace()),
            WsaVersion::V200408 => "wsa:Reply".to_owned(),
        })
    }
}
