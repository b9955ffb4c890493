//! Reading the source's answers: the expected response element, or its fault.

use super::ClientError;
use crate::{Endpoint, Version};
use bytes::Bytes;
use lather_envelope::{Element, Envelope, Limits, QName, SOAP12_NS, SoapVersion};

/// Bounds for parsing answers.
fn limits() -> Limits {
    Limits {
        max_message_bytes: super::transport::MAX_ANSWER_BYTES,
        max_depth: 64,
        max_attributes: 64,
    }
}

/// The Body element of an answer, which must be `{eventing ns}expected`; a fault becomes
/// [`ClientError::Fault`]. Returns the element and the bytes it was parsed from, or `None`
/// for an empty Body when `empty_ok` (the 2004/08 UnsubscribeResponse).
pub(crate) fn expect(
    status: u16,
    answer: Bytes,
    version: Version,
    expected: &str,
    empty_ok: bool,
) -> Result<Option<(Element, Bytes)>, ClientError> {
    let bad = |why: String| ClientError::BadAnswer { status, why };
    if answer.is_empty() {
        return Err(bad(format!("an empty answer instead of {expected}")));
    }
    let envelope = Envelope::parse(answer, &limits())
        .map_err(|f| bad(format!("not a SOAP envelope: {}", f.reason())))?;
    let Some(payload) = envelope.extract_payload() else {
        if empty_ok && !envelope.is_fault() {
            return Ok(None);
        }
        return Err(bad(format!("an empty Body instead of {expected}")));
    };
    let element = Element::parse(&payload, &limits())
        .map_err(|f| bad(format!("unreadable Body: {}", f.reason())))?;
    if envelope.is_fault() {
        return Err(fault(status, envelope.version(), &element));
    }
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

/// A SOAP 1.1 or 1.2 Fault element as an error.
fn fault(status: u16, soap: SoapVersion, element: &Element) -> ClientError {
    let text_of = |parent: &Element, ns: &str, local: &str| {
        parent
            .child(&QName::new(ns, local))
            .map(|e| e.text().trim().to_owned())
    };
    match soap {
        SoapVersion::V12 => {
            let code_el = element.child(&QName::new(SOAP12_NS, "Code"));
            let code = code_el
                .and_then(|c| text_of(c, SOAP12_NS, "Value"))
                .unwrap_or_default();
            let mut subcode = None;
            let mut at = code_el.and_then(|c| c.child(&QName::new(SOAP12_NS, "Subcode")));
            while let Some(sub) = at {
                if let Some(value) = text_of(sub, SOAP12_NS, "Value") {
                    subcode = Some(value);
                }
                at = sub.child(&QName::new(SOAP12_NS, "Subcode"));
            }
            let reason = element
                .child(&QName::new(SOAP12_NS, "Reason"))
                .and_then(|r| text_of(r, SOAP12_NS, "Text"))
                .unwrap_or_default();
            ClientError::Fault {
                status,
                code,
                subcode,
                reason,
            }
        }
        SoapVersion::V11 => ClientError::Fault {
            status,
            code: text_of(element, "", "faultcode").unwrap_or_default(),
            subcode: None,
            reason: text_of(element, "", "faultstring").unwrap_or_default(),
        },
    }
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
) -> Result<Endpoint, ClientError> {
    let bad = |why: &str| ClientError::BadAnswer {
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
