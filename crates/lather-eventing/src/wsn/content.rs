//! The MessageContent filter's admission: the one place that decides whether a
//! subscription's XPath expression can be used. XPath evaluation is not built yet, so every
//! MessageContent filter is refused here; when it is, this becomes a call to
//! `crate::xpath::XPathFilter::compile(&content.expression, &content.namespaces)`.

use super::fault::{WsnFault, WsnRefusal, refuse};
use super::terms::MessageContent;

/// Accepts `content` for a subscription, or refuses it with
/// `wsnt:InvalidMessageContentExpressionFault`.
pub(crate) fn admit(content: &MessageContent) -> Result<(), WsnRefusal> {
    refuse(
        WsnFault::MessageContent,
        format!(
            "XPath filters are not yet supported: MessageContent {:?} cannot be evaluated",
            content.expression
        ),
    )
}
