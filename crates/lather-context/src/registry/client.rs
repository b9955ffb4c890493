//! Asking a registry over SOAP/HTTP: what a gateway that follows it needs.

use super::NS;
use lather_client::{Call, Client, ClientError};
use lather_envelope::escape::escape_text;
use lather_envelope::{Element, Limits};
use std::time::Duration;

/// Why a query failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum QueryError {
    /// The call failed, or the registry answered with a fault.
    #[error(transparent)]
    Client(#[from] ClientError),
    /// The answer is not a `QueryResponse`.
    #[error("the registry's answer is not a QueryResponse")]
    Answer,
}

/// A client of one registry.
#[derive(Debug, Clone)]
pub struct RegistryClient {
    client: Client,
    url: String,
}

impl RegistryClient {
    /// A client of the registry at `url` (`http://` or `https://`, verified against the
    /// system's trusted CAs), each call bounded by `timeout`.
    pub fn new(url: impl Into<String>, timeout: Duration) -> Result<RegistryClient, ClientError> {
        RegistryClient::with_tls(url, timeout, lather_client::OutboundTls::system())
    }

    /// A client of the registry at `url`, verifying an `https://` registry against `tls`.
    pub fn with_tls(
        url: impl Into<String>,
        timeout: Duration,
        tls: lather_client::OutboundTls,
    ) -> Result<RegistryClient, ClientError> {
        Ok(RegistryClient {
            client: Client::builder()
                .request_timeout(timeout)
                .tls(tls)
                .build()?,
            url: url.into(),
        })
    }

    /// The endpoints of the live registrations named `name`, in the registry's order.
    pub async fn endpoints(&self, name: &str) -> Result<Vec<String>, QueryError> {
        let body = format!(
            "<lr:Query xmlns:lr=\"{NS}\"><lr:Name>{}</lr:Name></lr:Query>",
            escape_text(name)
        );
        let answer = self.client.call(&self.url, &Call::new(body)).await?;
        let payload = answer.extract_payload().ok_or(QueryError::Answer)?;
        let unbounded = Limits {
            max_message_bytes: usize::MAX,
            ..Limits::default()
        };
        let element = Element::parse(&payload, &unbounded).map_err(|_| QueryError::Answer)?;
        if element.name().local() != "QueryResponse" {
            return Err(QueryError::Answer);
        }
        Ok(element
            .elements()
            .filter_map(|r| {
                r.elements()
                    .find(|e| e.name().namespace() == NS && e.name().local() == "Endpoint")
                    .map(|e| e.text().trim().to_owned())
            })
            .collect())
    }
}
