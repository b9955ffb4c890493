//! The requests of an HTTP sink: each notification's POST appended to the bytes of the
//! next write, from parts kept per action ([`ActionParts`]): the request line, the
//! SOAPAction and Content-Type lines, the Content-Length field (its value written once
//! the body is) and the notification's opening, copied as one piece.

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
    soap: SoapVersion,
    template: Template,
    /// What a request begins with for the last action, reused while the action stays
    /// the same.
    action_parts: Option<ActionParts>,
    /// Notifications of at least this many bytes go gzip-compressed (`None`: never).
    gzip_from: Option<usize>,
    /// The requests of one write (events' payloads shared, not copied).
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
            self.wire.own(line.as_bytes());
            self.wire.own(parts.lines.as_bytes());
            self.scratch.clear();
            self.template.render(event, &mut self.scratch);
            match crate::protocol::compression::gzip(&self.scratch, min) {
                Some(packed) => {
                    self.wire.own(
                        format!(
                            "Content-Encoding: gzip\r\nContent-Length: {}\r\n\r\n",
                            packed.len()
                        )
                        .as_bytes(),
                    );
                    self.wire.own(&packed);
                }
                None => {
                    self.wire
                        .own(format!("Content-Length: {}\r\n\r\n", self.scratch.len()).as_bytes());
                    self.wire.own(&self.scratch);
                }
            }
            return Ok(());
        }
        // The request's start in one piece, then the rest of the body; the length is
        // written once the body is rendered, into its field.
        let field = self.wire.own_len() + parts.field;
        let body_start = self.wire.len() + parts.body;
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
    action: String,
    /// The header lines after the request line (SOAPAction, Content-Type).
    lines: String,
    /// The request line, `lines`, the Content-Length field (value not yet written) and,
    /// where the template splits, the notification's opening.
    start: Vec<u8>,
    /// Where in `start` the Content-Length field's value goes, and where the body begins.
    field: usize,
    body: usize,
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
        let mut lines = String::new();
        for (name, value) in [
            ("SOAPAction", h.soap_action),
            ("Content-Type", Some(h.content_type)),
        ] {
            if let Some(value) = value {
                lines.push_str(name);
                lines.push_str(": ");
                lines.push_str(
                    value
                        .to_str()
                        .map_err(|e| DeliveryError::Encode(e.to_string()))?,
                );
                lines.push_str("\r\n");
            }
        }
        let mut start = Vec::new();
        start.extend_from_slice(line.as_bytes());
        start.extend_from_slice(lines.as_bytes());
        let field = start.len() + "Content-Length: ".len();
        start.extend_from_slice(LENGTH_FIELD);
        let body = start.len();
        if opening && template.splits() {
            template.opening(event, &mut start);
        }
        Ok(ActionParts {
            action: action.to_owned(),
            lines,
            start,
            field,
            body,
        })
    }
}

/// The Content-Length field, its value right-aligned in 10 places (leading spaces are
/// optional whitespace) so it can be written after the body.
const LENGTH_FIELD: &[u8] = b"Content-Length:           \r\n\r\n";
const LENGTH_DIGITS: usize = 10;

#[derive(Debug, Clone)]
pub(super) struct Headers {
    pub(super) soap_action: Option<HeaderValue>,
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
