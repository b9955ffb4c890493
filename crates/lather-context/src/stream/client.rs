//! The Rust client as a sender of message streams: each call goes over the stream the
//! service granted for its operation, else — until then, and for every message that does
//! not fit — as plain SOAP/HTTP through [`lather_client::Client`].

use super::codec::StreamMessage;
use super::sender::{SendOutcome, SenderSettings, SenderStats, StreamSender};
use bytes::Bytes;
use lather_client::{Client, ClientError, SoapResponse, soap_headers};
use lather_envelope::Envelope;

/// A SOAP client that negotiates message streams with lather services.
///
/// ```no_run
/// # async fn run(envelope: lather_envelope::Envelope) -> Result<(), lather_client::ClientError> {
/// use lather_context::stream::{OnError, SenderSettings, StreamingClient};
/// let client = StreamingClient::new(
///     lather_client::Client::new(),
///     SenderSettings {
///         transport: Default::default(),
///         on_error: OnError::Fault,
///         retry: std::time::Duration::from_secs(60),
///         timeout: std::time::Duration::from_secs(10),
///         max_message_bytes: 4 * 1024 * 1024,
///         max_streams: 64,
///         tls: lather_client::OutboundTls::system(),
///     },
/// )?;
/// let answer = client.send("http://127.0.0.1:8080/echo", &envelope, Some("urn:echo")).await?;
/// # let _ = answer;
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct StreamingClient {
    client: Client,
    sender: StreamSender,
}

impl StreamingClient {
    /// A client sending through `client` until streams are open.
    pub fn new(client: Client, settings: SenderSettings) -> Result<Self, ClientError> {
        Ok(StreamingClient {
            client,
            sender: StreamSender::new(settings)?,
        })
    }

    /// How its messages went so far.
    pub fn stats(&self) -> &SenderStats {
        self.sender.stats()
    }

    /// Sends `envelope` with `action` (SOAPAction in 1.1, the `action` parameter in 1.2) to
    /// `url`, and reads the answer as [`Client::send`] does. A request lost with its stream
    /// is [`ClientError::Transport`] (it may have been processed) unless the settings say
    /// to resend it.
    pub async fn send(
        &self,
        url: &str,
        envelope: &Envelope,
        action: Option<&str>,
    ) -> Result<SoapResponse, ClientError> {
        let uri: http::Uri = url.parse().map_err(|_| ClientError::InvalidUrl {
            url: url.to_owned(),
            reason: "not a URL",
        })?;
        let version = envelope.version();
        let headers = soap_headers(version, action)?
            .iter()
            .map(|(name, value)| {
                (
                    name.as_str().to_owned(),
                    Bytes::copy_from_slice(value.as_bytes()),
                )
            })
            .collect();
        let message = StreamMessage {
            headers,
            body: envelope.as_bytes().clone(),
        };
        match self.sender.send(&uri, envelope.operation(), message).await {
            SendOutcome::Answered(status, reply) => {
                let content_type = reply
                    .headers
                    .iter()
                    .find(|(name, _)| name == "content-type")
                    .map(|(_, v)| String::from_utf8_lossy(v).into_owned());
                SoapResponse::from_answer(
                    status,
                    content_type,
                    reply.body,
                    version,
                    self.client.limits(),
                )
            }
            SendOutcome::Plain(_) => self.client.send(url, envelope, action).await,
            SendOutcome::Lost => Err(ClientError::Transport {
                url: url.to_owned(),
                source: "the message stream was lost after the request was sent".into(),
            }),
        }
    }
}
