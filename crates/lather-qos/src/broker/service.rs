//! The broker as a SOAP service (`builtin = "qos-broker"`).

use super::book::{BookError, OfferBook};
use super::protocol::{self, Request};
use lather_envelope::{Bytes, EnvelopeBuilder, Fault, FaultKind, Limits, QName};
use lather_pipeline::{Reply, ServiceFuture, ServiceRequest, SoapService};
use std::sync::Arc;

/// Answers `RegisterOffers`, `DeregisterOffers`, `SelectOffer` and `ListOffers`. A
/// registration belongs to the address it came from: only that address replaces or
/// removes the endpoint's offers while their lease runs.
#[derive(Debug, Clone)]
pub struct BrokerService {
    book: Arc<OfferBook>,
    limits: Limits,
    register_allow: Vec<lather_config::IpNet>,
}

impl BrokerService {
    /// The service over `book`; request bodies are read within `limits`; only clients in
    /// `register_allow` may register or remove offers.
    pub fn new(
        book: Arc<OfferBook>,
        limits: Limits,
        register_allow: Vec<lather_config::IpNet>,
    ) -> BrokerService {
        BrokerService {
            book,
            limits,
            register_allow,
        }
    }

    /// Refuses a registration or removal from a client `register_allow` does not list.
    fn may_register(&self, client: Option<std::net::IpAddr>) -> Result<(), Fault> {
        if client.is_some_and(|ip| self.register_allow.iter().any(|n| n.contains(ip))) {
            return Ok(());
        }
        let who = client.map_or_else(|| "this client".to_owned(), |ip| ip.to_string());
        Err(Fault::with_reason(
            FaultKind::InvalidOffer,
            format!("{who} may not register or remove offers here (the broker's register_allow)"),
        ))
    }
}

/// Seconds since the Unix epoch.
pub(crate) fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

pub(crate) fn book_fault(e: BookError) -> Fault {
    let kind = match &e {
        BookError::NotOwner { .. } | BookError::Invalid(_) => FaultKind::InvalidOffer,
        BookError::Full { .. } | BookError::OwnerFull { .. } | BookError::Store(_) => {
            FaultKind::OfferStoreUnavailable
        }
    };
    if let BookError::Store(e) = &e {
        tracing::warn!(error = %e, "QoS broker: the offer store failed");
    }
    Fault::with_reason(kind, e.to_string())
}

/// Runs a blocking book write off the async threads.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, BookError> + Send + 'static,
) -> Result<T, Fault> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|_| Fault::with_reason(FaultKind::Internal, "the offer store write failed"))?
        .map_err(book_fault)
}

impl SoapService for BrokerService {
    fn call<'a>(&'a self, request: ServiceRequest<'a>) -> ServiceFuture<'a> {
        Box::pin(async move {
            let version = request.envelope.version();
            let owner = request
                .context
                .client
                .map(|ip| ip.to_string())
                .unwrap_or_default();
            let body = match protocol::parse(&request.envelope, &self.limits)? {
                Request::Register { offers, lease } => {
                    self.may_register(request.context.client)?;
                    let count = offers.len();
                    let book = self.book.clone();
                    let lease =
                        blocking(move || book.register(offers, &owner, lease, now())).await?;
                    protocol::registered(count, lease)
                }
                Request::Deregister { endpoint } => {
                    self.may_register(request.context.client)?;
                    let book = self.book.clone();
                    let removed =
                        blocking(move || book.deregister(&endpoint, &owner, now())).await?;
                    protocol::deregistered(removed)
                }
                Request::Select(want) => {
                    let offer = self
                        .book
                        .select(&want, now())
                        .map_err(|e| Fault::with_reason(FaultKind::NoOfferFits, e.0))?;
                    protocol::offers_answer("SelectOfferResponse", &[offer])
                }
                Request::List { service } => protocol::offers_answer(
                    "ListOffersResponse",
                    &self.book.list(service.as_deref(), now()),
                ),
            };
            let bytes = EnvelopeBuilder::new(version)
                .body(Bytes::from(body))
                .build();
            Ok::<_, Fault>(Reply::Written(version, bytes))
        })
    }

    fn operations(&self) -> Vec<QName> {
        protocol::operations()
    }
}
