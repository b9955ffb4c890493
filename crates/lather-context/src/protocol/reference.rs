//! The `wsctx:context` element: a context named by reference.

use super::WSCTX_NS;
use lather_envelope::Element;
use lather_envelope::escape::escape_text;

/// A context by reference: its URI and the store that holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextReference {
    /// `wsctx:context-identifier`.
    pub uri: String,
    /// `wsctx:context-service`: the store's URL (may be empty when agreed out of band).
    pub service: String,
}

impl ContextReference {
    /// The element, declaring its namespace.
    pub fn to_xml(&self) -> String {
        let mut out = format!(
            "<wsctx:context xmlns:wsctx=\"{WSCTX_NS}\"><wsctx:context-identifier>{}</wsctx:context-identifier>",
            escape_text(&self.uri)
        );
        if !self.service.is_empty() {
            out.push_str(&format!(
                "<wsctx:context-service>{}</wsctx:context-service>",
                escape_text(&self.service)
            ));
        }
        out.push_str("</wsctx:context>");
        out
    }

    /// Reads one from a `context` element. Deployed peers vary the children's namespace,
    /// so they are matched by local name. `None` without an identifier.
    pub fn from_element(element: &Element) -> Option<ContextReference> {
        let text_of = |local: &str| {
            element
                .elements()
                .find(|e| e.name().local() == local)
                .map(|e| e.text().trim().to_owned())
        };
        let uri = text_of("context-identifier").filter(|u| !u.is_empty())?;
        Some(ContextReference {
            uri,
            service: text_of("context-service").unwrap_or_default(),
        })
    }
}
