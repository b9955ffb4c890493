//! The request rules: which addressing headers a request must have, how often, and what
//! they must hold.

use super::headers::{AddressingHeaders, ENDPOINT_REFERENCES, EprError};
use super::version::WsaVersion;
use lather_envelope::{Envelope, Fault, FaultKind};

/// Headers a message may carry at most once (`RelatesTo` may repeat with distinct
/// relationship types).
const SINGLE: [&str; 6] = ["To", "From", "ReplyTo", "FaultTo", "Action", "MessageID"];

/// Checks the addressing headers of a request whose SOAP action (`SOAPAction` or the
/// `action` parameter) is `soap_action`. With `required`, a request without addressing
/// headers is refused.
pub(crate) fn validate(
    envelope: &Envelope,
    soap_action: Option<&str>,
    required: bool,
) -> Result<(), Fault> {
    let headers = match AddressingHeaders::read(envelope) {
        Ok(Some(headers)) => headers,
        Ok(None) if required => {
            return Err(Fault::with_reason(
                FaultKind::MessageAddressingHeaderRequired,
                "this service requires WS-Addressing headers; the request has none",
            )
            .problem_header(WsaVersion::V10.name("Action")));
        }
        Ok(None) => return Ok(()),
        Err(mixed) => {
            return Err(Fault::with_reason(
                mixed.first.invalid(FaultKind::InvalidAddressingHeader),
                format!(
                    "the request mixes WS-Addressing versions: {} is not in {}",
                    mixed.other,
                    mixed.first.namespace()
                ),
            )
            .problem_header(mixed.other));
        }
    };
    let version = headers.version();
    let message_id = match headers.all("MessageID").count() {
        1 => headers.text("MessageID").flatten(),
        _ => None,
    };
    let fault = |kind: FaultKind, local: &str, reason: String| {
        let fault = Fault::with_reason(kind, reason).problem_header(version.name(local));
        match &message_id {
            Some(id) => fault.relates_to(id.clone()),
            None => fault,
        }
    };
    let missing = |local: &str, why: &str| {
        fault(
            version.header_required(),
            local,
            format!("wsa:{local} is required{why}"),
        )
    };
    let invalid = |kind: FaultKind, local: &str, why: &str| {
        fault(version.invalid(kind), local, format!("wsa:{local} {why}"))
    };

    for local in SINGLE {
        if headers.all(local).count() > 1 {
            return Err(invalid(
                FaultKind::InvalidCardinality,
                local,
                "occurs more than once",
            ));
        }
    }
    let mut relationships: Vec<String> = Vec::new();
    for block in headers.all("RelatesTo") {
        let relationship = headers.relationship(block);
        if relationships.contains(&relationship) {
            return Err(invalid(
                FaultKind::InvalidCardinality,
                "RelatesTo",
                &format!("occurs more than once with relationship {relationship}"),
            ));
        }
        relationships.push(relationship);
    }

    let action = match headers.text("Action") {
        None => return Err(missing("Action", "")),
        Some(Some(action)) if !action.is_empty() => action,
        Some(_) => {
            return Err(invalid(
                FaultKind::InvalidAddressingHeader,
                "Action",
                "must hold an IRI",
            ));
        }
    };
    for local in ["To", "MessageID"] {
        if let Some(text) = headers.text(local)
            && text.is_none_or(|t| t.is_empty())
        {
            return Err(invalid(
                FaultKind::InvalidAddressingHeader,
                local,
                "must hold an IRI",
            ));
        }
    }
    if version == WsaVersion::V200408 && headers.first("To").is_none() {
        return Err(missing("To", " by WS-Addressing 2004/08"));
    }

    let mut expects_reply = false;
    for local in ENDPOINT_REFERENCES {
        let address = match headers.address(local) {
            None => continue,
            Some(Ok(address)) => address,
            Some(Err(EprError::NoAddress)) => {
                return Err(invalid(
                    FaultKind::MissingAddressInEpr,
                    local,
                    "has no wsa:Address",
                ));
            }
            Some(Err(EprError::Malformed(why))) => {
                return Err(invalid(
                    FaultKind::InvalidAddressingHeader,
                    local,
                    &format!("is not a valid endpoint reference: {why}"),
                ));
            }
        };
        if local == "From" {
            continue;
        }
        expects_reply |= match version {
            // 1.0: a reply to a real endpoint must be related to this message.
            WsaVersion::V10 => !version.is_anonymous_or_none(&address),
            // 2004/08: MessageID "MUST be present if wsa:ReplyTo or wsa:FaultTo is present".
            WsaVersion::V200408 => true,
        };
    }
    if expects_reply && headers.first("MessageID").is_none() {
        return Err(missing(
            "MessageID",
            " when wsa:ReplyTo or wsa:FaultTo names an endpoint",
        ));
    }

    if let Some(soap_action) = soap_action.filter(|a| !a.is_empty())
        && soap_action != action
    {
        return Err(invalid(
            FaultKind::ActionMismatch,
            "Action",
            &format!("{action:?} does not match the SOAP action {soap_action:?}"),
        ));
    }
    Ok(())
}
