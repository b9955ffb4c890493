//! `format-convert`: renames Body elements, attributes and namespaces by a rule table.

mod mapping;
mod rewrite;
mod scope;
mod tag;

pub use mapping::MappingError;

use lather_envelope::{Fault, FaultKind};
use lather_pipeline::{Access, Handler, HandlerFuture, Message, Parts, Patch, Verdict};
use mapping::Mapping;
use rewrite::{RewriteError, rewrite};

/// Converts the Body between message formats that differ in names: an old client's format
/// reaches the service in the one it expects (request flow), and, with the rules reversed,
/// the answer goes back in the old one (response flow).
///
/// The rules (see the `mapping_file` format in docs/handlers.md) rename namespaces —
/// element and attribute names and the `xmlns` declarations in the Body content — and
/// single elements or attributes by Clark name. The content is rewritten as a stream:
/// prefixes are kept, text, comments and CDATA pass byte for byte, and a declaration is
/// added where a new namespace has no prefix in scope. Content that is not
/// namespace-well-formed gives `MalformedXml`; rules that would make two attributes of one
/// element the same give `HandlerFailed`.
#[derive(Debug, Clone)]
pub struct FormatConvert {
    mapping: Mapping,
}

impl FormatConvert {
    /// A converter with the rules in `text` (the `mapping_file` format), applied forwards
    /// (old names to new) or, with `reverse`, backwards.
    pub fn from_rules(text: &str, reverse: bool) -> Result<FormatConvert, MappingError> {
        Ok(FormatConvert {
            mapping: Mapping::parse(text, reverse)?,
        })
    }
}

impl Handler for FormatConvert {
    fn access(&self) -> Access {
        Access::read_write(Parts::none().body())
    }

    fn call<'a>(&'a self, message: &'a Message) -> HandlerFuture<'a> {
        Box::pin(async move {
            let envelope = message.envelope();
            let content = envelope.body();
            match rewrite(&content, &envelope.body_namespaces(), &self.mapping) {
                Ok(None) => Verdict::proceed(),
                Ok(Some(bytes)) => Verdict::Continue(Patch::new().replace_body(bytes)),
                Err(RewriteError::Malformed(why)) => Verdict::Fault(Fault::with_reason(
                    FaultKind::MalformedXml,
                    format!("format-convert: the Body is not namespace-well-formed: {why}"),
                )),
                Err(RewriteError::Unmappable(why)) => Verdict::Fault(Fault::with_reason(
                    FaultKind::HandlerFailed,
                    format!("format-convert: {why}"),
                )),
            }
        })
    }
}
