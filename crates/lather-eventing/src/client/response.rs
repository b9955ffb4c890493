//! Reading the source's answers: the expected response element.

use super::EventingClientError;
use crate::{Endpoint, Version};
use bytes::Bytes;
use lather_envelope::{Element, Envelope, Limits, QName};

/// Bounds for parsing answers.
fn limits() -> Limits {
    Limits {
        max_message_bytes: super::transport::MAX_ANSWER_BYTES,
        max_depth: 64,
        max_attributes: 64,
    }
}

/// The Body element of an answer, which must be `{eventing ns}expected` (faults were told
/// apart on the way in, by [`lather_client`]). Returns the element and the bytes it was
/// parsed from, or `None` for an empty Body when `empty_ok` (the 2004/08
/// UnsubscribeResponse).
pub(crate) fn expect(
    status: u16,
    answer: Option<Envelope>,
    version: Version,
    expected: &str,
    empty_ok: bool,
) -> Result<Option<(Element, Bytes)>, EventingClientError> {
    let bad = |why: String| EventingClientError::BadAnswer { status, why };
    let Some(envelope) = answer else {
        return Err(bad(format!("an empty answer instead of {expected}")));
    };
    let Some(payload) = envelope.extract_payload() else {
        if empty_ok {
            return Ok(None);
        }
        return Err(bad(format!("an empty Body instead of {expected}")));
    };
    let element = Element::parse(&payload, &limits())
        .map_err(|f| bad(format!("unreadable Body: {}", f.reason())))?;
    let name = element.name();
    if name.namespace() != version.eventing_ns() || name.local() != expected {
        return Err(bad(format!(
            "{{{}}}{} instead of {expected}",
            name.namespace(),
            name.local()
        )));
    }
    Ok(Some((element, payload)))
}

/// The text of the granted expiration in a response element (`Expires` in 2004/08,
/// `GrantedExpires` in 2011), if present.
pub(crate) fn granted(version: Version, element: &Element) -> Option<String> {
    let name = if version.is_2004() {
        "Expires"
    } else {
        "GrantedExpires"
    };
    element
        .child(&QName::new(version.eventing_ns(), name))
        .map(|e| e.text().trim().to_owned())
}

/// The SubscriptionManager EPR of a SubscribeResponse: its address and reference
/// parameters (reference properties too under WS-Addressing 2004/08), each standalone.
pub(crate) fn manager(
    status: u16,
    version: Version,
    element: &Element,
    source: &[u8],
) -> Result<Endpoint, EventingClientError> {
    let bad = |why: &str| EventingClientError::BadAnswer {
        status,
        why: why.to_owned(),
    };
    let wsa = version.addressing_ns();
    let epr = element
        .child(&QName::new(version.eventing_ns(), "SubscriptionManager"))
        .ok_or_else(|| bad("SubscribeResponse has no SubscriptionManager"))?;
    let address = epr
        .child(&QName::new(wsa, "Address"))
        .map(|a| a.text().trim().to_owned())
        .filter(|a| !a.is_empty())
        .ok_or_else(|| bad("the SubscriptionManager EPR has no wsa:Address"))?;
    let mut params = Vec::new();
    for holder in ["ReferenceParameters", "ReferenceProperties"] {
        if let Some(list) = epr.child(&QName::new(wsa, holder)) {
            for param in list.elements() {
                let bytes = param
                    .standalone(source)
                    .ok_or_else(|| bad("unreadable reference parameter"))?;
                params.push(String::from_utf8_lossy(&bytes).into_owned());
            }
        }
    }
    Ok(Endpoint { address, params })
}
