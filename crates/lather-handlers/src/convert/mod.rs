//! `format-convert`: renames Body elements, attributes and namespaces by a rule table.

mod mapping;
mod rewrite;
mod scope;
mod tag;

pub use mapping::MappingError;

use lather_envelope::{Fault, FaultKind};
use lather_pipeline::{
    Access, BuildEnv, Handler, HandlerFuture, HandlerKind, Message, Parts, Patch, SettingsError,
    Verdict, Work,
};
use mapping::Mapping;
use rewrite::{RewriteError, rewrite};
use serde::Deserialize;
use std::sync::Arc;

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

/// The `format-convert` kind (CPU-bound).
#[derive(Debug, Clone, Copy, Default)]
pub struct FormatConvertKind;

/// `[handlers.NAME]` settings of kind `format-convert`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FormatConvertSettings {
    /// The renaming rules, one per line (see docs/handlers.md) (required).
    pub mapping_file: String,
    /// Apply the rules backwards, new names to old (default false).
    #[serde(default)]
    pub reverse: bool,
}

impl HandlerKind for FormatConvertKind {
    type Settings = FormatConvertSettings;

    fn name(&self) -> &'static str {
        "format-convert"
    }

    fn work(&self) -> Work {
        Work::Cpu
    }

    fn build(
        &self,
        settings: FormatConvertSettings,
        _env: &BuildEnv<'_>,
    ) -> Result<Arc<dyn Handler>, SettingsError> {
        let file = &settings.mapping_file;
        let text = std::fs::read_to_string(file).map_err(|e| {
            SettingsError::key("mapping_file", format!("cannot read {file:?}: {e}"))
        })?;
        let convert = FormatConvert::from_rules(&text, settings.reverse).map_err(|e| {
            SettingsError::key("mapping_file", format!("{file}:{}: {}", e.line, e.message))
        })?;
        Ok(Arc::new(convert))
    }
}
