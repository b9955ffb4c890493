//! A server-side TLS handshake within a time bound, as every TLS port makes it: a failed or
//! late one is counted in `lather_tls_handshake_failures_total` and logged at debug.

use super::ClientCertificate;
use crate::metrics::ConnectionMetrics;
use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;

/// Makes the handshake of `stream` from `peer` within `within` (the configuration key
/// `bound` names it in the log); the TLS stream and the name of the client's verified
/// certificate, or `None` when it failed or took too long.
pub(crate) async fn accept_within<S>(
    acceptor: &TlsAcceptor,
    stream: S,
    within: Duration,
    bound: &'static str,
    metrics: &ConnectionMetrics,
    peer: SocketAddr,
) -> Option<(TlsStream<S>, Option<ClientCertificate>)>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    match tokio::time::timeout(within, acceptor.accept(stream)).await {
        Ok(Ok(tls)) => {
            let client = super::peer_name::of_connection(&tls);
            Some((tls, client))
        }
        Ok(Err(e)) => {
            metrics.tls_failed("error");
            tracing::debug!(%peer, error = %e, "TLS handshake failed");
            None
        }
        Err(_) => {
            metrics.tls_failed("timeout");
            tracing::debug!(%peer, bound, "TLS handshake not done in time");
            None
        }
    }
}
