//! The client: calls, one-way calls and raw sends over the pooled transport.

use crate::builder::ClientBuilder;
use crate::call::Call;
use crate::error::ClientError;
use crate::response::{self, SoapResponse};
use crate::transport::Transport;
use bytes::Bytes;
use lather_envelope::{Envelope, Limits, SoapVersion};

/// A SOAP client. Cheap to clone: clones share one pool of keep-alive connections.
///
/// # Cancel safety
///
/// Dropping a call's future abandons the request; its connection is closed rather than
/// returned to the pool, so no half-read answer is ever handed to the next call.
#[derive(Debug, Clone)]
pub struct Client {
    transport: Transport,
    pub(crate) default_version: SoapVersion,
    pub(crate) limits: Limits,
}

impl Default for Client {
    fn default() -> Self {
        Client::new()
    }
}

impl ClientBuilder {
    /// The client with these settings; a user agent that cannot be an HTTP header value is
    /// [`ClientError::InvalidRequest`].
    pub fn build(self) -> Result<Client, ClientError> {
        Ok(Client {
            transport: Transport::new(&self)?,
            default_version: self.default_version,
            limits: self.parse_limits(),
        })
    }
}

impl Client {
    /// A client with the [`ClientBuilder::new`] defaults.
    pub fn new() -> Client {
        ClientBuilder::new()
            .build()
            .expect("the default settings are valid")
    }

    /// A builder to set timeouts, bounds, pooling, the default SOAP version and the user
    /// agent.
    pub fn builder() -> ClientBuilder {
        ClientBuilder::new()
    }

    /// The bounds answers are parsed within.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Calls the operation `call` describes at `url` and returns the answer's envelope.
    ///
    /// A fault answer is [`ClientError::Fault`]; an empty answer is
    /// [`ClientError::EmptyAnswer`] (use [`call_oneway`](Self::call_oneway) for one-way
    /// operations).
    pub async fn call(&self, url: &str, call: &Call) -> Result<Envelope, ClientError> {
        let response = self.make(url, call).await?;
        let status = response.status();
        response
            .into_envelope()
            .ok_or(ClientError::EmptyAnswer { status })
    }

    /// Calls a one-way operation: success is any 2xx answer, `202 Accepted` with no body
    /// as WS-I prescribes, or an envelope that is not a fault (ignored).
    pub async fn call_oneway(&self, url: &str, call: &Call) -> Result<(), ClientError> {
        self.make(url, call).await.map(|_| ())
    }

    /// Sends an envelope the caller built, in its own SOAP version, with `action` (the
    /// SOAP 1.1 `SOAPAction` / the SOAP 1.2 `action` parameter).
    pub async fn send(
        &self,
        url: &str,
        envelope: &Envelope,
        action: Option<&str>,
    ) -> Result<SoapResponse, ClientError> {
        self.send_bytes(url, envelope.version(), action, envelope.as_bytes().clone())
            .await
    }

    /// Sends envelope bytes the caller built (not checked before sending) as SOAP
    /// `version` with `action`.
    pub async fn send_bytes(
        &self,
        url: &str,
        version: SoapVersion,
        action: Option<&str>,
        envelope: Bytes,
    ) -> Result<SoapResponse, ClientError> {
        let received = self.transport.post(url, version, action, envelope).await?;
        response::read(received, version, &self.limits)
    }

    async fn make(&self, url: &str, call: &Call) -> Result<SoapResponse, ClientError> {
        let version = call.version_or(self.default_version);
        let envelope = call.envelope(url, version)?;
        self.send_bytes(url, version, call.action_uri(), envelope)
            .await
    }
}
