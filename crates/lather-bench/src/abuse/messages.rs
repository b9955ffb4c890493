//! The SOAP messages the cases send: WS-Eventing 2011 Subscribe and
//! Unsubscribe, publishes, UsernameTokens.

use base64::Engine as _;
use sha1::{Digest as _, Sha1};

const SOAP12: &str = "http://www.w3.org/2003/05/soap-envelope";
const WSA: &str = "http://www.w3.org/2005/08/addressing";
const WSE: &str = "http://www.w3.org/2011/03/ws-evt";
const XPATH10: &str = "http://www.w3.org/2011/03/ws-evt/Dialects/XPath10";

/// A WS-Eventing 2011 Subscribe delivering to `notify_to`, with an XPath 1.0
/// filter when given.
pub(crate) fn subscribe(notify_to: &str, xpath: Option<&str>) -> String {
    let filter = xpath.map_or_else(String::new, |x| {
        format!(
            r#"<wse:Filter Dialect="{XPATH10}">{}</wse:Filter>"#,
            escape(x)
        )
    });
    format!(
        r#"<s:Envelope xmlns:s="{SOAP12}" xmlns:wsa="{WSA}" xmlns:wse="{WSE}"><s:Header><wsa:Action>{WSE}/Subscribe</wsa:Action><wsa:MessageID>urn:uuid:abuse-subscribe</wsa:MessageID></s:Header><s:Body><wse:Subscribe><wse:Delivery><wse:NotifyTo><wsa:Address>{}</wsa:Address></wse:NotifyTo></wse:Delivery><wse:Expires>PT10M</wse:Expires>{filter}</wse:Subscribe></s:Body></s:Envelope>"#,
        escape(notify_to)
    )
}

/// An Unsubscribe of the subscription `id` (lather's `lev:Identifier`).
pub(crate) fn unsubscribe(id: &str) -> String {
    format!(
        r#"<s:Envelope xmlns:s="{SOAP12}" xmlns:wsa="{WSA}" xmlns:wse="{WSE}"><s:Header><wsa:Action>{WSE}/Unsubscribe</wsa:Action><wsa:MessageID>urn:uuid:abuse-unsubscribe</wsa:MessageID><lev:Identifier wsa:IsReferenceParameter="true" xmlns:lev="urn:lather:eventing">{}</lev:Identifier></s:Header><s:Body><wse:Unsubscribe/></s:Body></s:Envelope>"#,
        escape(id)
    )
}

/// The subscription identifier in a SubscribeResponse, if any.
pub(crate) fn identifier(answer: &str) -> Option<String> {
    let at = answer.find("Identifier")?;
    let start = at + answer[at..].find('>')? + 1;
    let end = start + answer[start..].find('<')?;
    let id = answer[start..end].trim();
    (!id.is_empty()).then(|| id.to_owned())
}

/// A publish of `event` (the Body's element) with an action of the bench's.
pub(crate) fn publish(event: &str) -> String {
    format!(
        r#"<s:Envelope xmlns:s="{SOAP12}" xmlns:wsa="{WSA}"><s:Header><wsa:Action>urn:lather:abuse:Event</wsa:Action></s:Header><s:Body>{event}</s:Body></s:Envelope>"#
    )
}

/// An event of `nodes` elements (the root and its children).
pub(crate) fn event_of_nodes(nodes: usize) -> String {
    let mut s = String::from(r#"<ev:tree xmlns:ev="urn:lather:abuse">"#);
    for i in 1..nodes {
        s.push_str(&format!("<ev:n>{i}</ev:n>"));
    }
    s.push_str("</ev:tree>");
    s
}

/// An event of about `bytes` bytes.
pub(crate) fn event_of_bytes(bytes: usize) -> String {
    format!(
        r#"<ev:big xmlns:ev="urn:lather:abuse">{}</ev:big>"#,
        "x".repeat(bytes)
    )
}

/// A request to an echo service with `count` unknown mustUnderstand header
/// blocks sharing one long namespace.
pub(crate) fn must_understand_flood(count: usize, namespace_len: usize) -> String {
    let ns = format!("urn:lather:abuse:{}", "n".repeat(namespace_len));
    let mut s = format!(r#"<s:Envelope xmlns:s="{SOAP12}" xmlns:h="{ns}"><s:Header>"#);
    for i in 0..count {
        s.push_str(&format!(r#"<h:b{i} s:mustUnderstand="true"/>"#));
    }
    s.push_str(r#"</s:Header><s:Body><ns:echo xmlns:ns="urn:lather:echo"><text>mu</text></ns:echo></s:Body></s:Envelope>"#);
    s
}

/// An echo request with a WS-Security UsernameToken whose PasswordDigest is
/// right for `user`/`password`, `nonce` and `created`.
pub(crate) fn username_token(user: &str, password: &str, nonce: &[u8], created: &str) -> String {
    let b64 = base64::engine::general_purpose::STANDARD;
    let mut digest = Sha1::new();
    digest.update(nonce);
    digest.update(created.as_bytes());
    digest.update(password.as_bytes());
    let digest = b64.encode(digest.finalize());
    let nonce = b64.encode(nonce);
    format!(
        r#"<s:Envelope xmlns:s="{SOAP12}" xmlns:wsse="http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-wssecurity-secext-1.0.xsd" xmlns:wsu="http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-wssecurity-utility-1.0.xsd"><s:Header><wsse:Security><wsse:UsernameToken><wsse:Username>{}</wsse:Username><wsse:Password Type="http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-username-token-profile-1.0#PasswordDigest">{digest}</wsse:Password><wsse:Nonce EncodingType="http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-soap-message-security-1.0#Base64Binary">{nonce}</wsse:Nonce><wsu:Created>{created}</wsu:Created></wsse:UsernameToken></wsse:Security></s:Header><s:Body><ns:echo xmlns:ns="urn:lather:echo"><text>secure</text></ns:echo></s:Body></s:Envelope>"#,
        escape(user)
    )
}

/// `now` (seconds since the Unix epoch) as `YYYY-MM-DDThh:mm:ssZ`.
pub(crate) fn utc_timestamp(now: u64) -> String {
    let days = now / 86_400;
    let rem = now % 86_400;
    // Civil date from days since 1970-01-01 (proleptic Gregorian).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_utc_calendar_dates() {
        assert_eq!(utc_timestamp(0), "1970-01-01T00:00:00Z");
        assert_eq!(utc_timestamp(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(utc_timestamp(1_795_478_400 + 3_723), "2026-11-24T01:02:03Z");
    }

    #[test]
    fn the_identifier_is_found_in_a_subscribe_response() {
        let answer = r#"<wse:SubscriptionManager><wsa:Address>http://x/events</wsa:Address><wsa:ReferenceParameters><lev:Identifier xmlns:lev="urn:lather:eventing">urn:uuid:1-2</lev:Identifier></wsa:ReferenceParameters></wse:SubscriptionManager>"#;
        assert_eq!(identifier(answer).as_deref(), Some("urn:uuid:1-2"));
        assert_eq!(identifier("<s:Fault/>"), None);
    }

    #[test]
    fn the_flood_has_the_asked_number_of_blocks() {
        let m = must_understand_flood(10, 50);
        assert_eq!(m.matches("mustUnderstand=\"true\"").count(), 10);
        assert_eq!(event_of_nodes(100).matches("<ev:").count(), 100);
    }
}
