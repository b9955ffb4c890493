//! The MessageContent filter's admission: its dialect must be XPath 1.0 and its expression
//! must compile (`crate::protocol::xpath`); the subscription keeps the text and namespaces, and the
//! source compiles it again when it holds the subscription.

use super::fault::{WsnFault, WsnRefusal, refuse};
use super::terms::MessageContent;
use crate::protocol::xpath::XPathFilter;

/// Accepts `content` for a subscription, or refuses it with
/// `wsnt:InvalidMessageContentExpressionFault` naming why the expression does not compile
/// (the request reader has already refused other dialects).
pub(crate) fn admit(content: &MessageContent) -> Result<(), WsnRefusal> {
    match XPathFilter::compile(&content.expression, &content.namespaces) {
        Ok(_) => Ok(()),
        Err(why) => refuse(
            WsnFault::MessageContent,
            format!("MessageContent {:?}: {why}", content.expression),
        ),
    }
}
