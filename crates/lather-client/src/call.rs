//! One request as the caller describes it: the operation payload, the SOAP version, the
//! action, header blocks and WS-Addressing.

use crate::addressing::{Addressing, Wsa};
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
    addressing: Option<Addressing>,
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
            addressing: None,
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

    /// Adds WS-Addressing headers in version `wsa`: a fresh `wsa:MessageID`, `wsa:To` (the
    /// URL called), `wsa:Action` (the [`action`](Self::action), which addressing requires)
    /// and `wsa:ReplyTo` when [`reply_to`](Self::reply_to) gives one (2004/08 always sends
    /// one, anonymous by default, as its replies require).
    pub fn addressing(mut self, wsa: Wsa) -> Call {
        match &mut self.addressing {
            Some(addressing) => addressing.wsa = wsa,
            None => self.addressing = Some(Addressing::new(wsa)),
        }
        self
    }

    /// The `wsa:ReplyTo` address (effective with [`addressing`](Self::addressing)).
    pub fn reply_to(mut self, address: impl Into<String>) -> Call {
        if let Some(addressing) = &mut self.addressing {
            addressing.reply_to = Some(address.into());
        }
        self
    }

    /// Replaces the generated `wsa:MessageID` (effective with
    /// [`addressing`](Self::addressing)).
    pub fn with_message_id(mut self, id: impl Into<String>) -> Call {
        if let Some(addressing) = &mut self.addressing {
            addressing.message_id = id.into();
        }
        self
    }

    /// The `wsa:MessageID` the request will carry, if addressing is on: an answer's
    /// `wsa:RelatesTo` (see [`Wsa::relates_to`]) names it.
    pub fn message_id(&self) -> Option<&str> {
        self.addressing.as_ref().map(|a| a.message_id.as_str())
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
        if let Some(addressing) = &self.addressing {
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
