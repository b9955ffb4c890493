//! A cached answer and WS-Addressing: an answer is stored without its own `MessageID` and
//! `RelatesTo`, and served with a fresh `MessageID` and a `RelatesTo` naming the request
//! it now answers — never the identifiers of the exchange that filled the cache.

use crate::uuid::urn_uuid_v4;
use crate::wsa::version::WsaVersion;
use lather_envelope::{Edit, Envelope, EnvelopeBuilder, Fault, FaultKind, Limits};

/// The headers that belong to one exchange only.
const PER_EXCHANGE: [&str; 2] = ["MessageID", "RelatesTo"];

/// `answer` without its per-exchange addressing headers (itself when it has none).
pub(crate) fn strip(answer: Envelope) -> Result<Envelope, Fault> {
    let edits: Vec<Edit> = answer
        .headers()
        .iter()
        .enumerate()
        .filter(|(_, block)| {
            let name = block.name();
            WsaVersion::from_namespace(name.namespace()).is_some()
                && PER_EXCHANGE.contains(&name.local())
        })
        .map(|(index, _)| Edit::remove_header(index))
        .collect();
    rewrite(answer, &edits)
}

/// `cached` as the answer to `request`: with a fresh `MessageID` and a `RelatesTo` to the
/// request's `MessageID`, in the request's WS-Addressing version, when the request has one.
pub(crate) fn readdress(cached: Envelope, request: &Envelope) -> Result<Envelope, Fault> {
    let asked = WsaVersion::ALL.into_iter().find_map(|version| {
        let block = request.header(&version.name("MessageID"))?;
        Some((version, request.header_text(block)?))
    });
    let Some((version, id)) = asked else {
        return Ok(cached);
    };
    let block = |local: &str, text: &str| {
        EnvelopeBuilder::text_element(version.namespace(), "wsa", local, text)
    };
    let edits = [
        Edit::add_header(block("MessageID", &urn_uuid_v4()?))?,
        Edit::add_header(block("RelatesTo", &id))?,
    ];
    rewrite(cached, &edits)
}

fn rewrite(envelope: Envelope, edits: &[Edit]) -> Result<Envelope, Fault> {
    if edits.is_empty() {
        return Ok(envelope);
    }
    let bytes = envelope.write(edits).map_err(|e| {
        Fault::with_reason(
            FaultKind::Internal,
            format!("a cached answer could not be rewritten: {e}"),
        )
    })?;
    // The answer was parsed within the service's limits already; the two headers added are
    // small, so only its own size bounds it again.
    let limits = Limits {
        max_message_bytes: bytes.len(),
        ..Limits::default()
    };
    Envelope::parse(bytes, &limits)
}

#[cfg(test)]
mod tests {
    use super::*;
    use lather_envelope::{QName, WSA10_NS};

    fn parse(text: &str) -> Envelope {
        Envelope::parse(text.as_bytes().to_vec().into(), &Limits::default()).unwrap()
    }

    fn text(envelope: &Envelope, local: &str) -> Option<String> {
        let block = envelope.header(&QName::new(WSA10_NS, local))?;
        envelope.header_text(block)
    }

    #[test]
    fn a_served_answer_relates_to_the_request_that_asked_with_an_id_of_its_own() {
        let answer = parse(&format!(
            r#"<s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope" xmlns:a="{WSA10_NS}"><s:Header><a:MessageID>urn:uuid:old-answer</a:MessageID><a:RelatesTo>urn:uuid:first-request</a:RelatesTo><a:Action>urn:GetResponse</a:Action></s:Header><s:Body><r/></s:Body></s:Envelope>"#
        ));
        let stored = strip(answer).unwrap();
        assert_eq!(text(&stored, "MessageID"), None);
        assert_eq!(text(&stored, "RelatesTo"), None);
        assert_eq!(text(&stored, "Action").as_deref(), Some("urn:GetResponse"));
        let request = parse(&format!(
            r#"<s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope" xmlns:a="{WSA10_NS}"><s:Header><a:MessageID>urn:uuid:second-request</a:MessageID></s:Header><s:Body><g/></s:Body></s:Envelope>"#
        ));
        let served = readdress(stored.clone(), &request).unwrap();
        assert_eq!(
            text(&served, "RelatesTo").as_deref(),
            Some("urn:uuid:second-request")
        );
        let id = text(&served, "MessageID").unwrap();
        assert!(crate::uuid::is_urn_uuid_v4(&id), "{id}");
        assert_ne!(id, "urn:uuid:old-answer");
        // A request without addressing gets the stored answer as it is.
        let plain = parse(
            r#"<s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope"><s:Body><g/></s:Body></s:Envelope>"#,
        );
        assert_eq!(
            readdress(stored.clone(), &plain).unwrap().as_bytes(),
            stored.as_bytes()
        );
    }
}
