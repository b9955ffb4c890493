//! The eventing requests read from their Body element.

use crate::protocol::address::{Binding, SUPPORTED_SCHEMES};
use crate::protocol::filter::Filter;
use crate::protocol::problem::{Problem, Refusal, refuse};
use crate::protocol::version::PUSH_MODE;
use crate::protocol::xpath::XPathFilter;
use crate::{Endpoint, Version};
use lather_envelope::{Element, QName};

/// What a Subscribe asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SubscribeRequest {
    pub(crate) notify_to: Endpoint,
    pub(crate) end_to: Option<Endpoint>,
    pub(crate) expires: Option<ExpiresRequest>,
    /// Topics in Clark notation or as plain strings; empty = every event.
    pub(crate) topics: Vec<String>,
    /// Notification actions (DPWS action filter); empty = every action.
    pub(crate) actions: Vec<String>,
    /// An XPath filter the events must also pass.
    pub(crate) xpath: Option<XPathFilter>,
    /// Whether notifications are to be gzip-compressed (`lev:Compression`).
    pub(crate) gzip: bool,
    /// 2011: whether notifications go in the Wrap format (`wse:Notify`).
    pub(crate) wrapped: bool,
}

/// An `Expires` element: its text and whether the source may grant another value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ExpiresRequest {
    pub(crate) text: String,
    pub(crate) best_effort: bool,
}

/// Reads a Subscribe element (`source` = the bytes it was parsed from).
pub(crate) fn subscribe(
    element: &Element,
    source: &[u8],
    version: Version,
) -> Result<SubscribeRequest, Refusal> {
    let ns = version.eventing_ns();
    let end_to = match element.child(&QName::new(ns, "EndTo")) {
        Some(e) => Some(endpoint(e, source, version, "EndTo")?),
        None => None,
    };
    let Some(delivery) = element.child(&QName::new(ns, "Delivery")) else {
        return refuse(Problem::NoNotifyTo, "Subscribe has no Delivery");
    };
    if version.is_2004() {
        let mode = delivery
            .attribute(&QName::new("", "Mode"))
            .unwrap_or(PUSH_MODE);
        if mode.trim() != PUSH_MODE {
            return refuse(
                Problem::DeliveryMode,
                format!("delivery mode {mode:?} is not supported; only {PUSH_MODE}"),
            );
        }
    }
    let Some(notify) = delivery.child(&QName::new(ns, "NotifyTo")) else {
        return refuse(Problem::NoNotifyTo, "Delivery has no NotifyTo");
    };
    let notify_to = endpoint(notify, source, version, "NotifyTo")?;
    let gzip = crate::protocol::compression::requested(delivery)?;
    let wrapped = crate::protocol::format::wrapped(element, version)?;
    let expires = element.child(&QName::new(ns, "Expires")).map(expires);
    let (topics, actions, xpath) = match element.child(&QName::new(ns, "Filter")) {
        Some(filter) => match crate::protocol::filter::read(filter)? {
            Filter::Topics(topics) => (topics, Vec::new(), None),
            Filter::Actions(actions) => (Vec::new(), actions, None),
            Filter::XPath(xpath) => (Vec::new(), Vec::new(), Some(xpath)),
        },
        None => (Vec::new(), Vec::new(), None),
    };
    Ok(SubscribeRequest {
        notify_to,
        end_to,
        expires,
        topics,
        actions,
        xpath,
        gzip,
        wrapped,
    })
}

/// Reads an `Expires` element.
pub(crate) fn expires(element: &Element) -> ExpiresRequest {
    let best_effort = element
        .attribute(&QName::new("", "BestEffort"))
        .is_some_and(|v| matches!(v.trim(), "true" | "1"));
    ExpiresRequest {
        text: element.text().trim().to_owned(),
        best_effort,
    }
}

/// The topics of a Filter in the topic dialect: whitespace-separated tokens, each a QName
/// (`prefix:local`, resolved on the Filter, kept as `{ns}local`) or a plain topic string.
pub(crate) fn topics(filter: &Element) -> Result<Vec<String>, Refusal> {
    let text = filter.text();
    let mut topics = Vec::new();
    for token in text.split_whitespace() {
        if token.starts_with('{') || !token.contains(':') {
            topics.push(token.to_owned());
            continue;
        }
        match filter.resolve_qname(token) {
            Some(q) => topics.push(format!("{{{}}}{}", q.namespace(), q.local())),
            None => {
                return refuse(
                    Problem::BadFilter,
                    format!("topic {token:?} uses an undeclared prefix"),
                );
            }
        }
    }
    if topics.is_empty() {
        return refuse(Problem::EmptyFilter, "the topic filter names no topic");
    }
    Ok(topics)
}

/// An endpoint reference: its `wsa:Address` and its reference parameters (and, in
/// WS-Addressing 2004/08, reference properties), each as a standalone element.
fn endpoint(
    element: &Element,
    source: &[u8],
    version: Version,
    what: &str,
) -> Result<Endpoint, Refusal> {
    let wsa = version.addressing_ns();
    let Some(address) = element.child(&QName::new(wsa, "Address")) else {
        return refuse(Problem::Malformed, format!("{what} has no wsa:Address"));
    };
    let address = address.text().trim().to_owned();
    // Notifications and SubscriptionEnd go by any binding (`crate::delivery::binding::end`).
    if Binding::of(&address).is_none() {
        return refuse(
            Problem::UnusableEpr,
            format!("{what} address {address:?} is not usable; supported: {SUPPORTED_SCHEMES}"),
        );
    }
    let mut params = Vec::new();
    for holder in ["ReferenceParameters", "ReferenceProperties"] {
        if let Some(list) = element.child(&QName::new(wsa, holder)) {
            for param in list.elements() {
                let Some(bytes) = param.standalone(source) else {
                    return refuse(Problem::Malformed, format!("{what} {holder} unreadable"));
                };
                params.push(String::from_utf8_lossy(&bytes).into_owned());
            }
        }
    }
    Ok(Endpoint { address, params })
}

/// The request's Body element as a tree, with the payload bytes it was read from. The
/// envelope was checked against the server's limits already; these only bound the tree.
/// `Err` says why there is none (an empty Body, or a payload that does not parse).
pub(crate) fn body_element(
    envelope: &lather_envelope::Envelope,
) -> Result<(bytes::Bytes, Element), UnreadableBody> {
    let Some(payload) = envelope.extract_payload() else {
        return Err(UnreadableBody::Empty);
    };
    let limits = lather_envelope::Limits {
        max_message_bytes: usize::MAX,
        max_depth: 256,
        max_attributes: 256,
    };
    let element = Element::parse(&payload, &limits)
        .map_err(|f| UnreadableBody::Unparsable(f.reason().to_owned()))?;
    Ok((payload, element))
}

/// Why a request's Body gives no element to answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum UnreadableBody {
    /// The Body is empty.
    #[error("empty Body")]
    Empty,
    /// Its content does not parse (the parser's reason).
    #[error("{0}")]
    Unparsable(String),
}
