//! The response rules: the addressing headers an answer gets from its request.

use super::headers::AddressingHeaders;
use super::version::WsaVersion;
use crate::uuid::urn_uuid_v4;
use lather_envelope::{Envelope, EnvelopeBuilder, Fault};
use lather_pipeline::Patch;

/// The headers to add to `response` (an answer to `request`) so that it carries the
/// request's WS-Addressing version's `MessageID`, `RelatesTo`, `Action` and `To`; headers
/// the response already has stay as they are. A request without addressing headers gets
/// an untouched response.
///
/// `Action` is `response_action` if given, else the request's action + `Response`; a
/// fault's is `{ns}/fault`. `To` is the request's `FaultTo` (faults) or `ReplyTo` address;
/// without one, 2004/08 (where `To` is required) gets its anonymous address and 1.0 none
/// (an absent `To` means anonymous there).
pub(crate) fn reply_headers(
    request: &Envelope,
    soap_action: Option<&str>,
    response: &Envelope,
    is_fault: bool,
    response_action: Option<&str>,
) -> Result<Patch, Fault> {
    let headers = match AddressingHeaders::read(request) {
        Ok(Some(headers)) => headers,
        Ok(None) => return Ok(Patch::new()),
        // A request mixing the versions (refused on the way in when `wsa` validated it)
        // has no version to answer in.
        Err(_) => return Ok(Patch::new()),
    };
    let version = headers.version();
    let has = |local: &str| response.header(&version.name(local)).is_some();
    let block = |local: &str, text: &str| {
        (
            version.name(local),
            EnvelopeBuilder::text_element(version.namespace(), "wsa", local, text),
        )
    };
    let mut add = Vec::new();
    if !has("MessageID") {
        add.push(block("MessageID", &urn_uuid_v4()?));
    }
    if !has("RelatesTo")
        && let Some(Some(id)) = headers.text("MessageID")
    {
        add.push(block("RelatesTo", &id));
    }
    if !has("Action") {
        let request_action = headers
            .text("Action")
            .flatten()
            .or_else(|| soap_action.map(str::to_owned))
            .filter(|a| !a.is_empty());
        let action = if is_fault {
            Some(version.fault_action())
        } else {
            response_action
                .map(str::to_owned)
                .or_else(|| request_action.map(|a| a + "Response"))
        };
        if let Some(action) = action {
            add.push(block("Action", &action));
        }
    }
    if !has("To") {
        let endpoint = if is_fault {
            address(&headers, "FaultTo").or_else(|| address(&headers, "ReplyTo"))
        } else {
            address(&headers, "ReplyTo")
        };
        let to = match (endpoint, version) {
            (Some(address), _) => Some(address),
            (None, WsaVersion::V200408) => Some(version.anonymous()),
            (None, WsaVersion::V10) => None,
        };
        if let Some(to) = to {
            add.push(block("To", &to));
        }
    }
    Ok(add.into_iter().fold(Patch::new(), |patch, (name, bytes)| {
        patch.add_header(name, bytes)
    }))
}

/// The address of the request's endpoint reference header `local`, if it has a usable one.
fn address(headers: &AddressingHeaders<'_>, local: &str) -> Option<String> {
    headers.address(local).and_then(Result::ok)
}
