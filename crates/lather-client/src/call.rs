//! One request as the caller describes it: the operation payload, the SOAP version, the
//! action, header blocks and WS-Addressing.

use crate::addressing::{Addressing, Wsa, fresh_message_id};
use bytes::Bytes;
use lather_envelope::{EnvelopeBuilder, SoapVersion};

/// A SOAP request to make with [`Client::call`](crate::Client::call) or
/// [`Client::call_oneway`](crate::Client::call_oneway).
///
/// ```
/// use lather_client::{Call, Wsa};
/// use lather_envelope::SoapVersion;
/// let call = Call::new(r#"<m:GetQuote xmlns:m="urn:quotes"><m:sym>LATH</m:sym></m:GetQuote>"#)
///     .version(SoapVersion::V11)
///     .action("urn:quotes#GetQuote")
///     .header(r#"<t:Trace xmlns:t="urn:trace">42</t:Trace>"#)
///     .addressing(Wsa::V10);
/// assert!(call.message_id().unwrap().starts_with("urn:uuid:"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call {
    body: Bytes,
    version: Option<SoapVersion>,
    action: Option<String>,
    headers: Vec<Bytes>,
    wsa: Option<Wsa>,
    message_id: String,
    reply_to: Option<String>,
}

impl Call {
    /// A request whose Body holds `body`: the operation's payload element(s), each with
    /// its namespaces declared on itself. The SOAP version is the client's default until
    /// [`version`](Self::version) sets one.
    pub fn new(body: impl Into<Bytes>) -> Call {
        Call {
            body: body.into(),
            version: None,
            action: None,
            headers: Vec::new(),
            wsa: None,
            message_id: String::new(),
            reply_to: None,
        }
    }

    /// Sends the request in SOAP `version`.
    pub fn version(mut self, version: SoapVersion) -> Call {
        self.version = Some(version);
        self
    }

    /// The action: the `SOAPAction` header in SOAP 1.1, the `action` media-type parameter
    /// in SOAP 1.2, and `wsa:Action` when addressing is on.
    pub fn action(mut self, action: impl Into<String>) -> Call {
        self.action = Some(action.into());
        self
    }

    /// Adds a header block: one well-formed element with its namespaces declared on itself.
    pub fn header(mut self, block: impl Into<Bytes>) -> Call {
        self.headers.push(block.into());
        self
    }

    /// Adds WS-Addressing headers in version `wsa`: a `wsa:MessageID` (a fresh `urn:uuid`
    /// drawn by each call of this method), `wsa:To` (the URL called), `wsa:Action` (the
    /// [`action`](Self::action), which addressing requires) and `wsa:ReplyTo` when
    /// [`reply_to`](Self::reply_to) gives one (2004/08 always sends one, anonymous by
    /// default, as its replies require). A `Call` sent twice carries the same MessageID,
    /// as a retransmission does; call this again for a new message.
    pub fn addressing(mut self, wsa: Wsa) -> Call {
        self.wsa = Some(wsa);
        self.message_id = fresh_message_id();
        self
    }

    /// The `wsa:ReplyTo` address, sent when addressing is on.
    pub fn reply_to(mut self, address: impl Into<String>) -> Call {
        self.reply_to = Some(address.into());
        self
    }

    /// Replaces the `wsa:MessageID` [`addressing`](Self::addressing) drew (call it after).
    pub fn with_message_id(mut self, id: impl Into<String>) -> Call {
        self.message_id = id.into();
        self
    }

    /// The `wsa:MessageID` the request will carry, if addressing is on: an answer's
    /// `wsa:RelatesTo` (see [`Wsa::relates_to`]) names it.
    pub fn message_id(&self) -> Option<&str> {
        self.wsa.map(|_| self.message_id.as_str())
    }

    /// The action, if set.
    pub fn action_uri(&self) -> Option<&str> {
        self.action.as_deref()
    }

    /// The version set, if any.
    pub(crate) fn version_or(&self, default: SoapVersion) -> SoapVersion {
        self.version.unwrap_or(default)
    }

    /// The envelope's bytes for a request to `url` in `version`. Addressing without an
    /// action is refused (`wsa:Action` is mandatory).
    pub(crate) fn envelope(
        &self,
        url: &str,
        version: SoapVersion,
    ) -> Result<Bytes, crate::error::ClientError> {
        let mut builder = EnvelopeBuilder::new(version);
        if let Some(wsa) = self.wsa {
            let addressing = Addressing {
                wsa,
                message_id: &self.message_id,
                reply_to: self.reply_to.as_deref(),
            };
            let action = self.action.as_deref().ok_or_else(|| {
                crate::error::ClientError::InvalidRequest {
                    reason: "WS-Addressing needs an action (wsa:Action is mandatory)".into(),
                }
            })?;
            for block in addressing.header_blocks(url, action) {
                builder = builder.header(block);
            }
        }
        for block in &self.headers {
            builder = builder.header(block.clone());
        }
        Ok(builder.body(self.body.clone()).build())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lather_envelope::{Envelope, Limits, QName, WSA04_NS, WSA10_NS};

    fn sent(call: &Call, version: SoapVersion) -> Envelope {
        let bytes = call
            .envelope("http://h:1/svc", version)
            .expect("an envelope");
        Envelope::parse(bytes, &Limits::default()).expect("well-formed")
    }

    #[test]
    fn headers_and_body_go_into_the_envelope_in_order() {
        let call = Call::new("<m:x xmlns:m=\"urn:m\"/>")
            .action("urn:x")
            .header("<t:A xmlns:t=\"urn:t\">1</t:A>")
            .addressing(Wsa::V10)
            .header("<t:B xmlns:t=\"urn:t\">2</t:B>");
        let envelope = sent(&call, SoapVersion::V11);
        assert_eq!(envelope.version(), SoapVersion::V11);
        let names: Vec<String> = envelope
            .headers()
            .iter()
            .map(|h| h.name().to_string())
            .collect();
        assert_eq!(
            names,
            [
                format!("{{{WSA10_NS}}}MessageID"),
                format!("{{{WSA10_NS}}}To"),
                format!("{{{WSA10_NS}}}Action"),
                "{urn:t}A".to_owned(),
                "{urn:t}B".to_owned(),
            ]
        );
        let to = envelope.header(&QName::new(WSA10_NS, "To")).unwrap();
        assert_eq!(envelope.header_text(to).as_deref(), Some("http://h:1/svc"));
        let id = envelope.header(&QName::new(WSA10_NS, "MessageID")).unwrap();
        assert_eq!(envelope.header_text(id).as_deref(), call.message_id());
        assert_eq!(&envelope.body()[..], b"<m:x xmlns:m=\"urn:m\"/>");
    }

    #[test]
    fn reply_to_and_message_id_hold_whatever_the_order() {
        let call = Call::new("<m:x xmlns:m=\"urn:m\"/>")
            .reply_to("http://me/r")
            .action("urn:x")
            .addressing(Wsa::Submission04)
            .with_message_id("urn:uuid:fixed");
        assert_eq!(call.message_id(), Some("urn:uuid:fixed"));
        let envelope = sent(&call, SoapVersion::V12);
        let reply_to = envelope.header(&QName::new(WSA04_NS, "ReplyTo")).unwrap();
        let text = String::from_utf8_lossy(&envelope.header_bytes(reply_to)).into_owned();
        assert!(text.contains(">http://me/r</wsa:Address>"), "{text}");
        // Without addressing there is no MessageID and no addressing header.
        let plain = Call::new("<m:x xmlns:m=\"urn:m\"/>").reply_to("http://me/r");
        assert_eq!(plain.message_id(), None);
        assert!(sent(&plain, SoapVersion::V12).headers().is_empty());
    }
}
