//! The connection a request came on, as the host knows it.

use crate::marking::Marking;
use std::net::SocketAddr;
use std::sync::Arc;

/// The connection a request came on, carried in each request's extensions (one
/// extension, so a request allocates once for them).
#[derive(Debug, Clone)]
pub(crate) struct Peer {
    /// The connection's remote address.
    pub(crate) addr: SocketAddr,
    /// The marking the connection's answers take, on a TCP connection lather serves.
    pub(crate) marking: Option<Arc<Marking>>,
}

impl Peer {
    /// A request's peer at `addr`, whose connection's answers cannot be marked.
    pub(crate) fn unmarked(addr: SocketAddr) -> Self {
        Peer {
            addr,
            marking: None,
        }
    }
}
