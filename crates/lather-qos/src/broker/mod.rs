//! The QoS broker (the seed's Web Service Broker, `builtin = "qos-broker"`): services
//! register their offers, clients ask for the best offer that meets their requirements.
//! Offers are kept in a SQLite file (WAL) and answered from an in-memory index kept in
//! step with it, so a restart keeps every registration and a selection never reads disk.

mod book;
mod bus;
mod client;
pub(crate) mod protocol;
mod service;
mod store;

pub use book::{BookError, BookLimits, MAX_LISTED, NoFit, OfferBook, Selection};
pub use bus::{BUS_OWNER, apply, offers_subject};
pub use client::{BrokerClient, BrokerError};
pub use protocol::{deregister_message, register_message};
pub use service::BrokerService;
pub use store::{Held, OfferStore, StoreError};
