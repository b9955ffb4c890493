//! `[[service.route]]`: another set of stages for the messages a rule picks out.

use crate::Flow;
use serde::Deserialize;
use toml::Spanned;

/// One route of a service. The first route whose every given rule matches a message decides
/// that message's stages; a flow the route does not set is the service's.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RouteConfig {
    /// The Body's first child, in Clark notation `{namespace}local` (or `local`).
    pub operation: Option<Spanned<String>>,
    /// The action: `SOAPAction`, the SOAP 1.2 `action` parameter, or `wsa:Action`.
    pub action: Option<Spanned<String>>,
    /// A header block that must be present, in Clark notation.
    pub header: Option<Spanned<String>>,
    /// Admission class for the route's messages: `high`, `normal` or `low`. Only for routes
    /// that match by `action` alone, since admission happens before the body is read.
    pub priority: Option<Spanned<String>>,
    /// Stages run on the request instead of the service's.
    pub request: Option<Flow>,
    /// Stages run on the response instead of the service's.
    pub response: Option<Flow>,
}

/// Splits Clark notation `{ns}local` into namespace and local name; plain `local` has no
/// namespace. `None` if the text is not a name.
pub fn parse_clark(text: &str) -> Option<(String, String)> {
    let (ns, local) = match text.strip_prefix('{') {
        Some(rest) => {
            let (ns, local) = rest.split_once('}')?;
            (ns.to_owned(), local.to_owned())
        }
        None => (String::new(), text.to_owned()),
    };
    let valid = !local.is_empty() && !local.contains([':', '{', '}', ' ']);
    valid.then_some((ns, local))
}
