//! The client's address, as the host knows it.

use std::net::SocketAddr;

/// The connection's remote address, carried in each request's extensions.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Peer(pub(crate) SocketAddr);
