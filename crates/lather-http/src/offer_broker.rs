//! Where a server's QoS offers are registered (`[qos] broker`): a broker's URL, or the
//! NATS subject every broker with `[nats]` listens on.

use lather_qos::Offer;
use lather_qos::broker::{BrokerClient, BrokerError, deregister_message, register_message};
use std::time::Duration;

/// The broker and how often the offers go to it again.
#[derive(Debug, Clone)]
pub(crate) struct OfferBroker {
    /// Where the offers go.
    pub(crate) sender: OfferSender,
    /// How often offers are registered again.
    pub(crate) refresh: Duration,
}

/// Why offers could not be sent.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SendError {
    /// Over HTTP.
    #[error(transparent)]
    Http(#[from] BrokerError),
    /// Over NATS.
    #[error("NATS: {0}")]
    Nats(String),
}

/// Where offers go: a broker over HTTP, or the NATS offers subject every broker with
/// `[nats]` listens on.
#[derive(Debug, Clone)]
pub(crate) enum OfferSender {
    /// Over HTTP.
    Http(Box<BrokerClient>),
    /// Over NATS.
    Nats(async_nats::Client, String),
}

/// How long one broker call may take.
const BROKER_TIMEOUT: Duration = Duration::from_secs(5);

impl OfferSender {
    /// The sender to the broker at `url` (an `https://` one verified against `tls`);
    /// `None` (logged) when the URL cannot be called.
    pub(crate) fn http(url: &str, tls: &lather_client::OutboundTls) -> Option<OfferSender> {
        BrokerClient::with_tls(url.to_owned(), BROKER_TIMEOUT, tls.clone())
            .inspect_err(|e| tracing::warn!(error = %e, %url, "QoS broker: cannot call it"))
            .ok()
            .map(|c| OfferSender::Http(Box::new(c)))
    }

    /// Registers `offers` for `lease`; the lease granted (over NATS, the one asked for).
    pub(crate) async fn register(
        &self,
        offers: &[Offer],
        lease: Duration,
    ) -> Result<Duration, SendError> {
        match self {
            OfferSender::Http(client) => Ok(client.register(offers, lease).await?),
            OfferSender::Nats(client, subject) => {
                publish(client, subject, register_message(offers, lease)).await?;
                Ok(lease)
            }
        }
    }

    /// Removes `endpoint`'s offers.
    pub(crate) async fn deregister(&self, endpoint: &str) -> Result<(), SendError> {
        match self {
            OfferSender::Http(client) => client.deregister(endpoint).await.map(|_| ())?,
            OfferSender::Nats(client, subject) => {
                publish(client, subject, deregister_message(endpoint)).await?;
            }
        }
        Ok(())
    }
}

/// Publishes and flushes, within the broker timeout.
async fn publish(
    client: &async_nats::Client,
    subject: &str,
    body: String,
) -> Result<(), SendError> {
    let sent = async {
        client
            .publish(subject.to_owned(), body.into())
            .await
            .map_err(|e| SendError::Nats(e.to_string()))?;
        client
            .flush()
            .await
            .map_err(|e| SendError::Nats(e.to_string()))
    };
    tokio::time::timeout(BROKER_TIMEOUT, sent)
        .await
        .map_err(|_| SendError::Nats(format!("no answer within {BROKER_TIMEOUT:?}")))?
}
