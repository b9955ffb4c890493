//! TLS with rustls (ring provider): the listener's certificate, reloaded when its files
//! change, and client certificates ([`listener`]); the gateway's client configuration
//! towards `https://` upstreams ([`upstream`]).

mod error;
pub(crate) mod handshake;
pub(crate) mod listener;
pub(crate) mod peer_name;
mod pem;
mod reload;
pub(crate) mod stream;
pub(crate) mod upstream;

pub use error::TlsError;
pub use peer_name::ClientCertificate;

use std::sync::Arc;

/// The one crypto provider lather's TLS uses.
fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}
