//! Asking a QoS broker over SOAP/HTTP: register a server's offers, select the best offer
//! for a client's requirements.

use super::book::Selection;
use crate::QOS_NS;
use crate::offer::{Offer, offers_of};
use lather_client::{Call, Client, ClientError};
use lather_envelope::escape::escape_text;
use lather_envelope::{Element, Limits};
use std::fmt::Write as _;
use std::time::Duration;

/// Why a broker call failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BrokerError {
    /// The call failed, or the broker answered with a fault (e.g. `NoOfferFits`).
    #[error(transparent)]
    Client(#[from] ClientError),
    /// The answer is not the one asked for.
    #[error("the broker's answer is not a {0}")]
    Answer(&'static str),
}

/// A client of one broker.
#[derive(Debug, Clone)]
pub struct BrokerClient {
    client: Client,
    url: String,
}

impl BrokerClient {
    /// A client of the broker at `url` (`http://` or `https://`, verified against the
    /// system's trusted CAs), each call bounded by `timeout`.
    pub fn new(url: impl Into<String>, timeout: Duration) -> Result<BrokerClient, ClientError> {
        BrokerClient::with_tls(url, timeout, lather_client::OutboundTls::system())
    }

    /// A client of the broker at `url`, verifying an `https://` broker against `tls`.
    pub fn with_tls(
        url: impl Into<String>,
        timeout: Duration,
        tls: lather_client::OutboundTls,
    ) -> Result<BrokerClient, ClientError> {
        Ok(BrokerClient {
            client: Client::builder()
                .request_timeout(timeout)
                .tls(tls)
                .build()?,
            url: url.into(),
        })
    }

    async fn ask(&self, body: String, answer: &'static str) -> Result<Element, BrokerError> {
        let envelope = self.client.call(&self.url, &Call::new(body)).await?;
        let payload = envelope
            .extract_payload()
            .ok_or(BrokerError::Answer(answer))?;
        let unbounded = Limits {
            max_message_bytes: usize::MAX,
            ..Limits::default()
        };
        let element =
            Element::parse(&payload, &unbounded).map_err(|_| BrokerError::Answer(answer))?;
        if element.name().local() != answer || element.name().namespace() != QOS_NS {
            return Err(BrokerError::Answer(answer));
        }
        Ok(element)
    }

    /// The best offer for `want`; a `NoOfferFits` fault when none fits.
    pub async fn select(&self, want: &Selection) -> Result<Offer, BrokerError> {
        let mut body = format!(
            "<q:SelectOffer xmlns:q=\"{QOS_NS}\"><q:Service>{}</q:Service>",
            escape_text(&want.service)
        );
        if let Some(v) = want.max_response_time_ms {
            let _ = write!(body, "<q:MaxResponseTimeMs>{v}</q:MaxResponseTimeMs>");
        }
        if let Some(v) = want.min_throughput {
            let _ = write!(body, "<q:MinThroughput>{v}</q:MinThroughput>");
        }
        if let Some(v) = want.max_price {
            let _ = write!(body, "<q:MaxPrice>{v}</q:MaxPrice>");
        }
        if let Some(v) = want.compression {
            let _ = write!(body, "<q:Compression>{}</q:Compression>", v.as_str());
        }
        if let Some(v) = &want.class {
            let _ = write!(body, "<q:TrafficClass>{}</q:TrafficClass>", escape_text(v));
        }
        body.push_str("</q:SelectOffer>");
        let element = self.ask(body, "SelectOfferResponse").await?;
        offers_of(&element)
            .ok()
            .and_then(|o| o.into_iter().next())
            .ok_or(BrokerError::Answer("SelectOfferResponse"))
    }

    /// Registers `offers` (replacing every offer of their endpoints) for `lease`; the lease
    /// granted.
    pub async fn register(
        &self,
        offers: &[Offer],
        lease: Duration,
    ) -> Result<Duration, BrokerError> {
        let body = super::protocol::register_message(offers, lease);
        let element = self.ask(body, "RegisterOffersResponse").await?;
        element
            .elements()
            .find(|e| e.name().local() == "LeaseSeconds")
            .and_then(|e| e.text().trim().parse().ok())
            .map(Duration::from_secs)
            .ok_or(BrokerError::Answer("RegisterOffersResponse"))
    }

    /// Removes the offers of `endpoint`; how many there were.
    pub async fn deregister(&self, endpoint: &str) -> Result<usize, BrokerError> {
        let body = super::protocol::deregister_message(endpoint);
        let element = self.ask(body, "DeregisterOffersResponse").await?;
        element
            .elements()
            .find(|e| e.name().local() == "Removed")
            .and_then(|e| e.text().trim().parse().ok())
            .ok_or(BrokerError::Answer("DeregisterOffersResponse"))
    }

    /// The live offers the broker holds, of one service or all.
    pub async fn list(&self, service: Option<&str>) -> Result<Vec<Offer>, BrokerError> {
        let body = match service {
            Some(s) => format!(
                "<q:ListOffers xmlns:q=\"{QOS_NS}\"><q:Service>{}</q:Service></q:ListOffers>",
                escape_text(s)
            ),
            None => format!("<q:ListOffers xmlns:q=\"{QOS_NS}\"/>"),
        };
        let element = self.ask(body, "ListOffersResponse").await?;
        offers_of(&element).map_err(|_| BrokerError::Answer("ListOffersResponse"))
    }
}
