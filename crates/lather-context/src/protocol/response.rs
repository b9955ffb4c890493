//! Writing the store's answers (the Body's content).

use super::{ContextReference, NS};
use crate::StoredContext;
use lather_envelope::escape::escape_text;

/// The facts every answer about one context carries: the reference, version, ETag, digest
/// and expiry (milliseconds since the Unix epoch).
fn facts(context: &StoredContext, service: &str) -> String {
    let reference = ContextReference {
        uri: context.uri.clone(),
        service: service.to_owned(),
    };
    format!(
        "{}<lc:Version>{}</lc:Version><lc:ETag>{}</lc:ETag><lc:Digest>{}</lc:Digest><lc:ExpiresAtMs>{}</lc:ExpiresAtMs>",
        reference.to_xml(),
        context.version,
        escape_text(&context.etag()),
        context.digest(),
        context.expires_at_ms
    )
}

/// `SetContextResponse`; the token only when the write created the context.
pub fn set_response(context: &StoredContext, token: Option<&str>, service: &str) -> String {
    let token = token.map_or_else(String::new, |t| {
        format!("<lc:Token>{}</lc:Token>", escape_text(t))
    });
    format!(
        "<lc:SetContextResponse xmlns:lc=\"{NS}\">{}{token}</lc:SetContextResponse>",
        facts(context, service)
    )
}

/// `GetContextResponse`, with the contents.
pub fn get_response(context: &StoredContext, service: &str) -> String {
    format!(
        "<lc:GetContextResponse xmlns:lc=\"{NS}\">{}<lc:Contents>{}</lc:Contents></lc:GetContextResponse>",
        facts(context, service),
        context.contents
    )
}

/// `RemoveContextResponse`.
pub fn remove_response(uri: &str) -> String {
    format!(
        "<lc:RemoveContextResponse xmlns:lc=\"{NS}\"><lc:Uri>{}</lc:Uri></lc:RemoveContextResponse>",
        escape_text(uri)
    )
}
