//! One keep-alive HTTP/1.1 connection of a virtual client.

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::Full;
use hyper::client::conn::http1;
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;
use tokio::task::JoinHandle;

use super::counting::{CountingStream, IoCounters};
use super::finished::{ErrorKind, RequestFailure};

/// An established connection: hyper's request sender, the task driving the
/// connection, and the connection's byte counters.
///
/// Dropping it aborts the driver task, which closes the socket.
#[derive(Debug)]
pub(crate) struct Conn {
    pub(crate) sender: http1::SendRequest<Full<Bytes>>,
    pub(crate) counters: Arc<IoCounters>,
    driver: JoinHandle<()>,
}

impl Drop for Conn {
    fn drop(&mut self) {
        self.driver.abort();
    }
}

impl Conn {
    /// Connects to `addr` (with `TCP_NODELAY`) and performs the HTTP/1.1
    /// handshake.
    pub(crate) async fn connect(addr: SocketAddr) -> Result<Self, RequestFailure> {
        let stream = TcpStream::connect(addr)
            .await
            .map_err(|e| RequestFailure::connect(&e))?;
        // Nagle would add up to 40 ms to small requests.
        stream
            .set_nodelay(true)
            .map_err(|e| RequestFailure::connect(&e))?;
        let counters = Arc::new(IoCounters::default());
        let io = TokioIo::new(CountingStream::new(stream, Arc::clone(&counters)));
        let (sender, connection) = http1::Builder::new()
            .handshake(io)
            .await
            .map_err(|e| RequestFailure::new(ErrorKind::Protocol, e.to_string()))?;
        let driver = tokio::spawn(async move {
            // Errors surface on the request side as well; nothing to do here.
            let _ = connection.await;
        });
        Ok(Self {
            sender,
            counters,
            driver,
        })
    }
}
