//! Registrations over NATS: with `[qos] broker = "nats"` a server publishes its
//! `q:RegisterOffers` (and, when it stops, `q:DeregisterOffers`) on
//! `{subject_prefix}.qos.offers`, and every broker with `[nats]` applies them. The bus is
//! the operator's own: its registrations all belong to the owner `nats`, so any server on
//! it may replace an endpoint's offers (HTTP registrants cannot touch them while their
//! lease runs, nor NATS ones theirs).

use super::book::OfferBook;
use super::protocol::{self, Request};
use super::service::now;
use lather_envelope::{Element, Fault, FaultKind, Limits};
use std::sync::Arc;

/// The subject offers travel on, under a `[nats] subject_prefix`.
pub fn offers_subject(prefix: &str) -> String {
    format!("{prefix}.qos.offers")
}

/// The owner of registrations made over NATS.
pub const BUS_OWNER: &str = "nats";

/// Applies one message of the offers subject to `book`: a registration or a removal. A
/// message that is neither, or that the book refuses, is a fault (the caller logs it).
pub async fn apply(book: &Arc<OfferBook>, payload: &[u8], limits: &Limits) -> Result<(), Fault> {
    let element = Element::parse(payload, limits)?;
    let book = book.clone();
    let work = match protocol::parse_element(&element)? {
        Request::Register { offers, lease } => tokio::task::spawn_blocking(move || {
            book.register(offers, BUS_OWNER, lease, now()).map(|_| ())
        }),
        Request::Deregister { endpoint } => tokio::task::spawn_blocking(move || {
            book.deregister(&endpoint, BUS_OWNER, now()).map(|_| ())
        }),
        Request::Select(_) | Request::List { .. } => {
            return Err(Fault::with_reason(
                FaultKind::UnknownOperation,
                "only RegisterOffers and DeregisterOffers travel over NATS",
            ));
        }
    };
    work.await
        .map_err(|_| Fault::with_reason(FaultKind::Internal, "the offer store write failed"))?
        .map_err(super::service::book_fault)
}
