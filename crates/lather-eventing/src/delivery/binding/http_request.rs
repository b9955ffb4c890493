//! The requests of an HTTP sink: each notification's POST appended to the bytes of the
//! next write, from parts kept per action ([`ActionParts`]): the request line, the
//! SOAPAction and Content-Type lines, the Content-Length field (its value written once
//! the body is) and the notification's opening (where the template splits: not for
//! WS-BaseNotification), copied as one piece. A gzip-compressed notification is rendered
//! whole, compressed, and framed by the length it then has. [`headers`] gives the same
//! SOAPAction and Content-Type to a SubscriptionEnd sent on its own.

use super::soap::Template;
use super::wire::{Out, Wire};
use crate::Subscription;
use crate::delivery::DeliveryError;
use crate::delivery::stamped::Stamped;
use crate::protocol::reply::soap_of;
use http::header::HeaderValue;
use lather_envelope::SoapVersion;

/// What a sink's requests are made from, and the bytes of the next write.
#[derive(Debug)]
pub(super) struct Requests {
    /// `POST {path} HTTP/1.1\r\nHost: {authority}\r\n`, if the address is usable.
    request_line: Option<String>,
    /// The SOAP version of its notifications (SOAPAction or the Content-Type's action).
    soap: SoapVersion,
    /// Its notifications' envelope.
    template: Template,
    /// What a request begins with for the last action, reused while the action stays
    /// the same.
    action_parts: Option<ActionParts>,
    /// Notifications of at least this many bytes go gzip-compressed (`None`: never).
    gzip_from: Option<usize>,
    /// The requests of one write (events' payloads shared, not copied): read and written
    /// by the HTTP sink, which writes them on its connection.
    pub(super) wire: Wire,
    /// A notification rendered whole, to compress it.
    scratch: Vec<u8>,
}

impl Requests {
    /// `sub`'s requests, to `request_line` (`None`: its address is no usable URL), those
    /// of at least `gzip_from` bytes compressed.
    pub(super) fn new(
        sub: &Subscription,
        request_line: Option<String>,
        gzip_from: Option<usize>,
    ) -> Requests {
        Requests {
            request_line,
            soap: soap_of(sub),
            template: Template::new(sub),
            action_parts: None,
            gzip_from,
            wire: Wire::default(),
            scratch: Vec::new(),
        }
    }

    /// Forgets the bytes of the last write, and lets go of a compression buffer grown
    /// beyond `most` bytes.
    pub(super) fn clear(&mut self, most: usize) {
        self.wire.clear();
        if self.scratch.capacity() > most {
            self.scratch = Vec::new();
        }
    }

    /// Appends the POST of `event` to [`Requests::wire`]; `address` names the sink in
    /// errors.
    pub(super) fn append(&mut self, address: &str, event: &Stamped) -> Result<(), DeliveryError> {
        let Some(line) = &self.request_line else {
            return Err(DeliveryError::Refused(format!(
                "{address} is not a usable URL"
            )));
        };
        let action = self.template.action(event);
        let parts = match &mut self.action_parts {
            Some(parts) if parts.action == action => parts,
            slot => slot.insert(ActionParts::new(
                self.soap,
                line,
                &self.template,
                event,
                // A compressed notification is rendered whole: no opening kept for it.
                self.gzip_from.is_none(),
            )?),
        };
        if let Some(min) = self.gzip_from {
            self.wire.own(parts.head());
            self.scratch.clear();
            self.template.render(event, &mut self.scratch);
            let packed = crate::protocol::compression::gzip(&self.scratch, min);
            if packed.is_some() {
                self.wire.own(b"Content-Encoding: gzip\r\n");
            }
            let body = packed.as_deref().unwrap_or(&self.scratch);
            self.wire.own(LENGTH_NAME.as_bytes());
            self.wire
                .own(itoa::Buffer::new().format(body.len()).as_bytes());
            self.wire.own(b"\r\n\r\n");
            self.wire.own(body);
            return Ok(());
        }
        // The request's start in one piece, then the rest of the body; the length is
        // written once the body is rendered, into its field.
        let field = self.wire.own_len() + parts.field();
        let body_start = self.wire.len() + parts.body();
        self.wire.own(&parts.start);
        if self.template.splits() {
            self.template.rest(event, &mut self.wire);
        } else {
            self.template.render(event, &mut self.wire);
        }
        let mut length = itoa::Buffer::new();
        let digits = length.format(self.wire.len() - body_start);
        if digits.len() > LENGTH_DIGITS {
            return Err(DeliveryError::Encode("notification too long".into()));
        }
        let at = field + LENGTH_DIGITS - digits.len();
        self.wire.own_mut()[at..at + digits.len()].copy_from_slice(digits.as_bytes());
        Ok(())
    }
}

/// The parts of a request that depend on its action alone.
#[derive(Debug)]
struct ActionParts {
    /// The action they were made for.
    action: String,
    /// The request line, the SOAPAction and Content-Type lines, the Content-Length field
    /// (value not yet written) and, where the template splits, the notification's opening.
    start: Vec<u8>,
    /// Where in `start` the Content-Length field begins.
    length_at: usize,
}

impl ActionParts {
    /// The parts of `event`'s requests (and every other event's of the same action), to
    /// `line` (the request line and Host), with the notification's opening when `opening`
    /// and the template splits.
    fn new(
        soap: SoapVersion,
        line: &str,
        template: &Template,
        event: &Stamped,
        opening: bool,
    ) -> Result<ActionParts, DeliveryError> {
        let action = template.action(event);
        let h = headers(soap, action)?;
        let mut start = Vec::new();
        start.extend_from_slice(line.as_bytes());
        for (name, value) in [
            ("SOAPAction", h.soap_action),
            ("Content-Type", Some(h.content_type)),
        ] {
            if let Some(value) = value {
                start.extend_from_slice(name.as_bytes());
                start.extend_from_slice(b": ");
                let value = value
                    .to_str()
                    .map_err(|e| DeliveryError::Encode(e.to_string()))?;
                start.extend_from_slice(value.as_bytes());
                start.extend_from_slice(b"\r\n");
            }
        }
        let length_at = start.len();
        start.extend_from_slice(LENGTH_FIELD);
        if opening && template.splits() {
            template.opening(event, &mut start);
        }
        Ok(ActionParts {
            action: action.to_owned(),
            start,
            length_at,
        })
    }

    /// The request line and the header lines before Content-Length.
    fn head(&self) -> &[u8] {
        &self.start[..self.length_at]
    }

    /// Where in `start` the Content-Length field's value goes.
    fn field(&self) -> usize {
        self.length_at + LENGTH_NAME.len()
    }

    /// Where in `start` the body begins.
    fn body(&self) -> usize {
        self.length_at + LENGTH_FIELD.len()
    }
}

/// The Content-Length field's name, as [`LENGTH_FIELD`] begins.
const LENGTH_NAME: &str = "Content-Length: ";
/// The Content-Length field, its value right-aligned in 10 places (leading spaces are
/// optional whitespace) so it can be written after the body.
const LENGTH_FIELD: &[u8] = b"Content-Length:           \r\n\r\n";
/// The places [`LENGTH_FIELD`] leaves for the value: bodies up to 9 999 999 999 bytes.
const LENGTH_DIGITS: usize = 10;

/// The HTTP header fields a SOAP message with a given action goes with.
#[derive(Debug)]
pub(super) struct Headers {
    /// `SOAPAction: "{action}"` (SOAP 1.1 only).
    pub(super) soap_action: Option<HeaderValue>,
    /// `text/xml` (1.1) or `application/soap+xml` with the action (1.2), UTF-8.
    pub(super) content_type: HeaderValue,
}

/// The SOAPAction (1.1) and Content-Type of a message with `action`.
pub(super) fn headers(soap: SoapVersion, action: &str) -> Result<Headers, DeliveryError> {
    let action = action.replace('"', "%22");
    Ok(match soap {
        SoapVersion::V11 => Headers {
            soap_action: Some(
                HeaderValue::from_str(&format!("\"{action}\""))
                    .map_err(|e| DeliveryError::Encode(e.to_string()))?,
            ),
            content_type: HeaderValue::from_static("text/xml; charset=utf-8"),
        },
        SoapVersion::V12 => Headers {
            soap_action: None,
            content_type: HeaderValue::from_str(&format!(
                "application/soap+xml; charset=utf-8; action=\"{action}\""
            ))
            .map_err(|e| DeliveryError::Encode(e.to_string()))?,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Event;

    fn sub(address: &str, soap12: bool, gzip: bool) -> Subscription {
        let mut sub: Subscription = serde_json::from_str(&format!(
            r#"{{"id":"urn:uuid:1","version":"Rec2011","soap12":{soap12},"notify_to":{{"address":"{address}","params":[]}},"end_to":null,"manager":"http://127.0.0.1:8/events","expires_ms":4102444800000,"topics":[]}}"#
        ))
        .unwrap();
        sub.gzip = gzip;
        sub
    }

    fn event(action: &str, text: &str) -> std::sync::Arc<Stamped> {
        Stamped::new(
            Event {
                payload: bytes::Bytes::from(format!("<q:E xmlns:q=\"urn:q\">{text}</q:E>")),
                action: None,
                topics: Vec::new(),
                headers: Vec::new(),
            },
            action.to_owned(),
            None,
        )
    }

    /// A request's head fields (lowercase names, trimmed values).
    type Fields = Vec<(String, String)>;

    /// The requests in `bytes`, each as its head's fields and its body.
    fn requests(mut bytes: &[u8]) -> Vec<(Fields, Vec<u8>)> {
        let mut out = Vec::new();
        while !bytes.is_empty() {
            let mut fields = [httparse::EMPTY_HEADER; 16];
            let mut request = httparse::Request::new(&mut fields);
            let httparse::Status::Complete(head) = request.parse(bytes).unwrap() else {
                panic!("a request cut short");
            };
            assert_eq!(request.method, Some("POST"));
            assert_eq!(request.path, Some("/n?x=1"));
            let fields: Vec<(String, String)> = request
                .headers
                .iter()
                .map(|h| {
                    let value = String::from_utf8(h.value.to_vec()).unwrap();
                    (h.name.to_ascii_lowercase(), value.trim().to_owned())
                })
                .collect();
            let length: usize = fields
                .iter()
                .find(|(n, _)| n == "content-length")
                .map(|(_, v)| v.parse().unwrap())
                .unwrap();
            out.push((fields, bytes[head..head + length].to_vec()));
            bytes = &bytes[head + length..];
        }
        out
    }

    fn field<'a>(fields: &'a [(String, String)], name: &str) -> Option<&'a str> {
        fields
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    #[test]
    fn requests_of_one_write_each_have_their_action_and_exact_length() {
        let mut requests_of = Requests::new(
            &sub("http://127.0.0.1:9/n?x=1", false, false),
            Some("POST /n?x=1 HTTP/1.1\r\nHost: 127.0.0.1:9\r\n".into()),
            None,
        );
        let events = [
            event("urn:a", "one"),
            event("urn:a", &"two".repeat(2000)),
            event("urn:b\"q", "three"),
        ];
        for e in &events {
            requests_of.append("http://127.0.0.1:9/n?x=1", e).unwrap();
        }
        let written = requests(&requests_of.wire.gathered());
        assert_eq!(written.len(), 3);
        let mut ids = Vec::new();
        for ((fields, body), (e, action)) in
            written.iter().zip(
                events
                    .iter()
                    .zip(["\"urn:a\"", "\"urn:a\"", "\"urn:b%22q\""]),
            )
        {
            assert_eq!(field(fields, "host"), Some("127.0.0.1:9"));
            assert_eq!(field(fields, "soapaction"), Some(action));
            assert_eq!(
                field(fields, "content-type"),
                Some("text/xml; charset=utf-8")
            );
            let envelope = lather_envelope::Envelope::parse(
                bytes::Bytes::from(body.clone()),
                &lather_envelope::Limits::default(),
            )
            .unwrap();
            let text = String::from_utf8(body.clone()).unwrap();
            assert!(text.contains(std::str::from_utf8(&e.payload).unwrap()));
            assert!(text.contains(&format!(r#"<lev:EventStamp seq="{}""#, e.seq)));
            let block = envelope
                .header(&lather_envelope::QName::new(
                    lather_envelope::WSA10_NS,
                    "MessageID",
                ))
                .unwrap();
            let id = envelope.header_text(block).unwrap();
            assert!(id.starts_with("urn:uuid:") && id.len() == 45, "{id}");
            ids.push(id);
        }
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), 3, "one message id per notification");
    }

    #[test]
    fn a_compressed_request_is_framed_by_its_compressed_length() {
        let mut requests_of = Requests::new(
            &sub("http://127.0.0.1:9/n?x=1", true, true),
            Some("POST /n?x=1 HTTP/1.1\r\nHost: 127.0.0.1:9\r\n".into()),
            Some(2000),
        );
        // From 2 000 bytes of envelope on: the first is far over, the second far under.
        let big = event("urn:a", &"x".repeat(5000));
        let small = event("urn:a", "y");
        requests_of.append("a", &big).unwrap();
        requests_of.append("a", &small).unwrap();
        let written = requests(&requests_of.wire.gathered());
        let (fields, body) = &written[0];
        assert_eq!(field(fields, "content-encoding"), Some("gzip"));
        assert_eq!(
            field(fields, "content-type"),
            Some(r#"application/soap+xml; charset=utf-8; action="urn:a""#)
        );
        let mut plain = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&body[..]), &mut plain)
            .unwrap();
        assert!(plain.ends_with(b"</s:Body></s:Envelope>"));
        // Under the threshold: sent as it is.
        let (fields, body) = &written[1];
        assert_eq!(field(fields, "content-encoding"), None);
        assert!(body.ends_with(b"</s:Body></s:Envelope>"));
    }

    #[test]
    fn an_address_that_is_no_usable_url_is_refused_by_name() {
        let mut requests_of = Requests::new(&sub("mailto:x", false, false), None, None);
        let refused = requests_of.append("mailto:x", &event("urn:a", "one"));
        assert!(
            matches!(&refused, Err(DeliveryError::Refused(why)) if why.contains("mailto:x")),
            "{refused:?}"
        );
    }
}
