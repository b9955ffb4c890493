//! The receiving side's state for message streams: the tokens granted, the port told to
//! senders, the bounds, the counters.

use crate::counted::ByteCounts;
use lather_config::StreamConfig;
use lather_context::stream::{AcceptLimits, CodecLimits, StreamTokens};
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

/// Most tokens granted and not yet used at once.
const MAX_WAITING_TOKENS: usize = 1024;

/// The receiving side's state: tokens granted, the port, the bounds, the counters.
#[derive(Debug)]
pub(crate) struct StreamAcceptor {
    pub(crate) tokens: StreamTokens,
    port: u16,
    pub(crate) limits: AcceptLimits,
    pub(crate) connections: Arc<Semaphore>,
    /// Stream connections that ended cleanly.
    pub(crate) served: AtomicU64,
    /// Stream connections refused (cap, token) or ended by an error.
    pub(crate) failed: AtomicU64,
    /// Bytes read from and written to stream connections.
    pub(crate) bytes: Arc<ByteCounts>,
    /// Set when the server stops: connections answer what is in flight and close.
    stop: tokio::sync::watch::Sender<bool>,
    max_connections: usize,
    /// The handshake each connection makes first, when stream connections speak TLS (the
    /// listener's certificate and client authentication).
    pub(crate) tls: Option<crate::tls::listener::SharedServerConfig>,
}

impl StreamAcceptor {
    /// Binds `config.listen`; connections make a TLS handshake with `tls` first when set.
    pub(crate) async fn bind(
        config: &StreamConfig,
        max_message_bytes: usize,
        tls: Option<crate::tls::listener::SharedServerConfig>,
    ) -> Result<(TcpListener, StreamAcceptor), crate::ServeError> {
        let listener =
            TcpListener::bind(config.listen)
                .await
                .map_err(|source| crate::ServeError::Listen {
                    address: config.listen,
                    source,
                })?;
        let port = config.public_port.unwrap_or(listener.local_addr()?.port());
        let acceptor = StreamAcceptor {
            tokens: StreamTokens::new(
                Duration::from_secs(config.token_lifetime_s),
                MAX_WAITING_TOKENS,
            ),
            port,
            limits: AcceptLimits {
                codec: CodecLimits {
                    max_schemas: config.max_schemas,
                    max_message_bytes,
                    ..CodecLimits::default()
                },
                max_in_flight: config.max_in_flight,
                frame_timeout: Duration::from_millis(config.frame_timeout_ms),
                idle_timeout: Duration::from_millis(config.idle_timeout_ms),
            },
            connections: Arc::new(Semaphore::new(config.max_connections)),
            served: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            bytes: Arc::default(),
            stop: tokio::sync::watch::Sender::new(false),
            max_connections: config.max_connections,
            tls,
        };
        Ok((listener, acceptor))
    }

    /// Completes once the server is stopping.
    pub(crate) fn stopping(&self) -> impl std::future::Future<Output = ()> + Send + 'static {
        let mut stop = self.stop.subscribe();
        async move {
            let _ = stop.wait_for(|stop| *stop).await;
        }
    }

    /// Tells every stream connection to finish: no more requests read, those in flight
    /// answered.
    pub(crate) fn stop(&self) {
        self.stop.send_replace(true);
    }

    /// Completes once no stream connection is open.
    pub(crate) async fn drained(&self) {
        let all = u32::try_from(self.max_connections).unwrap_or(u32::MAX);
        let _ = self.connections.acquire_many(all).await;
    }

    /// The port told to senders: `public_port`, else the one bound.
    pub(crate) fn port(&self) -> u16 {
        self.port
    }
}
