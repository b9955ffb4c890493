//! WS-BaseNotification requests read from their Body element.

use super::WSN_NS;
use super::fault::{WsnFault, WsnRefusal, qname_list, refuse};
use super::terms::{MessageContent, WsnTerms};
use super::{content, topic};
use crate::Endpoint;
use lather_envelope::{Element, QName, WSA10_NS};

/// The XPath 1.0 dialect URI, the MessageContent dialect lather recognises.
pub(crate) const XPATH10_DIALECT: &str = "http://www.w3.org/TR/1999/REC-xpath-19991116";

/// The XML Schema instance namespace (`xsi:nil`).
const XSI_NS: &str = "http://www.w3.org/2001/XMLSchema-instance";

/// What a `wsnt:Subscribe` asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SubscribeRequest {
    /// Where notifications go.
    pub(crate) consumer: Endpoint,
    /// The filter and policy.
    pub(crate) terms: WsnTerms,
    /// The InitialTerminationTime text; `None` when absent or nil.
    pub(crate) initial: Option<String>,
}

fn wsnt(local: &str) -> QName {
    QName::new(WSN_NS, local)
}

/// Reads a Subscribe element (`source` = the bytes it was parsed from).
pub(crate) fn subscribe(element: &Element, source: &[u8]) -> Result<SubscribeRequest, WsnRefusal> {
    let Some(consumer) = element.child(&wsnt("ConsumerReference")) else {
        return refuse(
            WsnFault::CreationFailed,
            "Subscribe has no ConsumerReference",
        );
    };
    let consumer = endpoint(consumer, source)?;
    let mut terms = WsnTerms::default();
    if let Some(filter) = element.child(&wsnt("Filter")) {
        read_filter(filter, &mut terms)?;
    }
    if let Some(policy) = element.child(&wsnt("SubscriptionPolicy")) {
        let mut unknown = Vec::new();
        for p in policy.elements() {
            if *p.name() == wsnt("UseRaw") {
                terms.raw = true;
            } else {
                unknown.push((p.name().namespace().to_owned(), p.name().local().to_owned()));
            }
        }
        if !unknown.is_empty() {
            let names: Vec<String> = unknown.iter().map(|(n, l)| format!("{{{n}}}{l}")).collect();
            return Err(WsnRefusal {
                fault: WsnFault::Policy,
                reason: format!(
                    "subscription policy {} is not recognised; only wsnt:UseRaw",
                    names.join(", ")
                ),
                extra: String::new(),
            }
            .with_extra(qname_list("UnrecognizedPolicy", &unknown)));
        }
    }
    let initial = element
        .child(&wsnt("InitialTerminationTime"))
        .filter(|e| !is_nil(e))
        .map(|e| e.text().trim().to_owned());
    Ok(SubscribeRequest {
        consumer,
        terms,
        initial,
    })
}

/// Whether `element` carries `xsi:nil="true"`.
fn is_nil(element: &Element) -> bool {
    element
        .attribute(&QName::new(XSI_NS, "nil"))
        .is_some_and(|v| matches!(v.trim(), "true" | "1"))
}

/// Reads the Filter's components into `terms`.
fn read_filter(filter: &Element, terms: &mut WsnTerms) -> Result<(), WsnRefusal> {
    let mut unknown = Vec::new();
    let dialect = |e: &Element| e.attribute(&QName::new("", "Dialect")).map(str::to_owned);
    for part in filter.elements() {
        if *part.name() == wsnt("TopicExpression") {
            terms
                .topics
                .push(topic::parse(dialect(part).as_deref(), &part.text(), part)?);
        } else if *part.name() == wsnt("MessageContent") {
            let content = MessageContent {
                dialect: dialect(part).unwrap_or_else(|| XPATH10_DIALECT.to_owned()),
                expression: part.text().trim().to_owned(),
                namespaces: part.namespaces().to_vec(),
            };
            if content.dialect.trim() != XPATH10_DIALECT {
                return refuse(
                    WsnFault::MessageContent,
                    format!(
                        "MessageContent dialect {:?} is not supported; only {XPATH10_DIALECT}",
                        content.dialect
                    ),
                );
            }
            content::admit(&content)?;
            terms.message_content = Some(content);
        } else {
            unknown.push((
                part.name().namespace().to_owned(),
                part.name().local().to_owned(),
            ));
        }
    }
    if unknown.is_empty() {
        return Ok(());
    }
    let names: Vec<String> = unknown.iter().map(|(n, l)| format!("{{{n}}}{l}")).collect();
    Err(WsnRefusal {
        fault: WsnFault::InvalidFilter,
        reason: format!(
            "filter {} is not supported; only TopicExpression and MessageContent",
            names.join(", ")
        ),
        extra: String::new(),
    }
    .with_extra(qname_list("UnknownFilter", &unknown)))
}

/// The consumer's endpoint reference: its `wsa:Address` (an `http://` URL, or a
/// `soap.tcp://` / `lather.bin://` address: see `crate::delivery::binding`) and its reference
/// parameters, each as a standalone element.
fn endpoint(element: &Element, source: &[u8]) -> Result<Endpoint, WsnRefusal> {
    let Some(address) = element.child(&QName::new(WSA10_NS, "Address")) else {
        return refuse(
            WsnFault::CreationFailed,
            "ConsumerReference has no wsa:Address (WS-Addressing 1.0)",
        );
    };
    let address = address.text().trim().to_owned();
    if crate::protocol::address::Binding::of(&address).is_none() {
        return refuse(
            WsnFault::CreationFailed,
            format!(
                "consumer address {address:?} is not one lather can deliver to; supported: {}",
                crate::protocol::address::SUPPORTED_SCHEMES
            ),
        );
    }
    let mut params = Vec::new();
    if let Some(list) = element.child(&QName::new(WSA10_NS, "ReferenceParameters")) {
        for param in list.elements() {
            let Some(bytes) = param.standalone(source) else {
                return refuse(WsnFault::Malformed, "unreadable reference parameter");
            };
            params.push(String::from_utf8_lossy(&bytes).into_owned());
        }
    }
    Ok(Endpoint { address, params })
}

/// One published message of a `wsnt:Notify`: the event and the topic it was sent on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Published {
    /// The Message's element, standalone.
    pub(crate) event: Vec<u8>,
    /// The event's root name first, then the topic the Notify named, if any.
    pub(crate) topics: Vec<String>,
}

/// Reads a Notify element into its messages.
pub(crate) fn notify(element: &Element, source: &[u8]) -> Result<Vec<Published>, WsnRefusal> {
    let mut out = Vec::new();
    for message in element.elements() {
        if *message.name() != wsnt("NotificationMessage") {
            continue;
        }
        let Some(event) = message
            .child(&wsnt("Message"))
            .and_then(|m| m.elements().next())
        else {
            return refuse(
                WsnFault::Malformed,
                "a NotificationMessage has no Message element with content",
            );
        };
        let Some(bytes) = event.standalone(source) else {
            return refuse(WsnFault::Malformed, "unreadable Message");
        };
        let mut topics = vec![format!(
            "{{{}}}{}",
            event.name().namespace(),
            event.name().local()
        )];
        if let Some(t) = message.child(&wsnt("Topic")) {
            let dialect = t.attribute(&QName::new("", "Dialect"));
            topics.push(topic::parse(dialect, &t.text(), t)?.topic);
        }
        out.push(Published {
            event: bytes.to_vec(),
            topics,
        });
    }
    if out.is_empty() {
        return refuse(WsnFault::Malformed, "Notify holds no NotificationMessage");
    }
    Ok(out)
}
