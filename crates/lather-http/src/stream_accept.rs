//! Negotiated message streams, receiving side: the `[stream]` listener, streams carried
//! over HTTP/2, and the handoff of each rebuilt request to its service along the same path
//! as an HTTP request (admission, handlers, metrics), so handlers and services cannot tell
//! a stream's messages from others.

use crate::arriving::Arriving;
use crate::dispatch;
use crate::peer::Peer;
use crate::respond::HttpResponse;
use crate::state::State;
use crate::stream_acceptor::StreamAcceptor;
use crate::tls::ClientCertificate;
use crate::watched::Watched;
use bytes::Bytes;
use http::{HeaderName, HeaderValue, Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use lather_context::stream::duplex::{self, BodyReader, ChannelBody, Duplex, H2_CONTENT_TYPE};
use lather_context::stream::{Handoff, StreamMessage, serve_connection};
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;
use tokio::net::TcpListener;

/// Accepts stream connections until `shutdown` completes.
pub(crate) async fn run(
    listener: TcpListener,
    state: Arc<State>,
    acceptor: Arc<StreamAcceptor>,
    shutdown: impl Future<Output = ()>,
) {
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = &mut shutdown => return,
        };
        let (stream, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(e) => {
                tracing::debug!(error = %e, "stream accept failed");
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        let Ok(slot) = acceptor.connections.clone().try_acquire_owned() else {
            acceptor.failed.fetch_add(1, Ordering::Relaxed);
            tracing::debug!(%peer, "stream connection refused: stream.max_connections reached");
            continue;
        };
        let _ = stream.set_nodelay(true);
        let Some(tls) = acceptor.tls.as_ref().map(|tls| tls.acceptor()) else {
            let handoff = DispatchHandoff::new(state.clone(), peer, None);
            tokio::spawn(serve_counted(acceptor.clone(), stream, handoff, peer, slot));
            continue;
        };
        let (state, acceptor) = (state.clone(), acceptor.clone());
        tokio::spawn(async move {
            // The handshake, like the preface after it, within the frame timeout.
            let accepted = crate::tls::handshake::accept_within(
                &tls,
                stream,
                acceptor.limits.frame_timeout,
                "frame_timeout_ms",
                &state.metrics.connections,
                peer,
            );
            match accepted.await {
                Some((tls, client)) => {
                    let handoff = DispatchHandoff::new(state, peer, client);
                    serve_counted(acceptor, tls, handoff, peer, slot).await;
                }
                None => {
                    acceptor.failed.fetch_add(1, Ordering::Relaxed);
                }
            }
        });
    }
}

/// Serves one stream connection, counting its bytes and how it ended; `held` (its
/// connection slot, and for HTTP/2 its request's busy mark) lives as long as it does.
async fn serve_counted<T, H>(
    acceptor: Arc<StreamAcceptor>,
    io: T,
    handoff: Arc<DispatchHandoff>,
    peer: SocketAddr,
    held: H,
) where
    T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    H: Send,
{
    let _held = held;
    let io = Watched::new(io, acceptor.bytes.clone());
    let stopping = acceptor.stopping();
    match serve_connection(io, &acceptor.tokens, acceptor.limits, handoff, stopping).await {
        Ok(()) => acceptor.served.fetch_add(1, Ordering::Relaxed),
        Err(e) => {
            tracing::debug!(%peer, error = %e, "stream connection ended");
            acceptor.failed.fetch_add(1, Ordering::Relaxed)
        }
    };
}

/// The body of every answer of the HTTP listener: a whole message, or the receiving
/// side of a stream carried over HTTP/2.
pub(crate) type ServerBody = http_body_util::Either<Full<Bytes>, ChannelBody>;

/// Whether `req` opens a stream carried over HTTP/2.
pub(crate) fn is_h2_stream<B>(req: &Request<B>) -> bool {
    req.method() == Method::POST
        && req.version() == http::Version::HTTP_2
        && req
            .headers()
            .get(http::header::CONTENT_TYPE)
            .is_some_and(|v| v.as_bytes() == H2_CONTENT_TYPE.as_bytes())
}

/// Serves a stream carried in this HTTP/2 request: the request body is the sender's side
/// of the connection, the answer's body ours. `client` is the connection's client
/// certificate; `busy` keeps the HTTP connection from counting as idle while the stream
/// lives.
pub(crate) fn h2_stream(
    state: Arc<State>,
    req: Request<hyper::body::Incoming>,
    peer: SocketAddr,
    client: Option<ClientCertificate>,
    busy: crate::idle::Busy,
) -> Response<ServerBody> {
    let refused = |status: StatusCode, why: &'static str| {
        let mut response = Response::new(http_body_util::Either::Left(Full::new(Bytes::from(why))));
        *response.status_mut() = status;
        response
    };
    let Some(acceptor) = state.streams.clone() else {
        return refused(
            StatusCode::NOT_FOUND,
            "this server does not accept message streams\n",
        );
    };
    let Ok(slot) = acceptor.connections.clone().try_acquire_owned() else {
        acceptor.failed.fetch_add(1, Ordering::Relaxed);
        return refused(
            StatusCode::SERVICE_UNAVAILABLE,
            "too many message streams\n",
        );
    };
    let (writer, body) = duplex::channel();
    let io = Duplex::new(BodyReader::new(req.into_body()), writer);
    let handoff = DispatchHandoff::new(state, peer, client);
    tokio::spawn(serve_counted(acceptor, io, handoff, peer, (slot, busy)));
    let mut response = Response::new(http_body_util::Either::Right(body));
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static(H2_CONTENT_TYPE),
    );
    response
}

/// Hands rebuilt requests to the server's dispatch, as from `peer` (with its verified
/// client certificate, when the connection presented one).
struct DispatchHandoff {
    state: Arc<State>,
    peer: SocketAddr,
    client: Option<ClientCertificate>,
    /// The `Host` every rebuilt request carries: the listen address.
    host: HeaderValue,
}

impl DispatchHandoff {
    fn new(state: Arc<State>, peer: SocketAddr, client: Option<ClientCertificate>) -> Arc<Self> {
        let host = HeaderValue::from_str(&state.listen.to_string())
            .unwrap_or(HeaderValue::from_static("localhost"));
        Arc::new(DispatchHandoff {
            state,
            peer,
            client,
            host,
        })
    }
}

impl Handoff for DispatchHandoff {
    fn handle(
        &self,
        target: Arc<str>,
        message: StreamMessage,
    ) -> Pin<Box<dyn Future<Output = (u16, StreamMessage)> + Send + 'static>> {
        let state = self.state.clone();
        let peer = self.peer;
        let client = self.client.clone();
        let host = self.host.clone();
        Box::pin(async move {
            let mut request = Request::new(Full::new(message.body));
            *request.method_mut() = Method::POST;
            *request.uri_mut() = target.parse().unwrap_or_default();
            let headers = request.headers_mut();
            for (name, value) in message.headers {
                if let (Ok(name), Ok(value)) = (
                    HeaderName::from_bytes(name.as_bytes()),
                    HeaderValue::from_maybe_shared(value),
                ) {
                    headers.append(name, value);
                }
            }
            headers.insert(http::header::HOST, host);
            if let Some(client) = client {
                request.extensions_mut().insert(client);
            }
            let arriving = Arriving {
                request,
                peer: Peer::unmarked(peer),
            };
            reply_message(dispatch::handle_guarded(state, Box::new(arriving)).await).await
        })
    }
}

/// An HTTP response as a stream reply: its status, content type and body.
async fn reply_message(response: HttpResponse) -> (u16, StreamMessage) {
    let (parts, body) = response.into_parts();
    let body = body
        .collect()
        .await
        .map(|c| c.to_bytes())
        .unwrap_or_default();
    let headers = parts
        .headers
        .get(http::header::CONTENT_TYPE)
        .map(|v| {
            vec![(
                "content-type".to_owned(),
                Bytes::copy_from_slice(v.as_bytes()),
            )]
        })
        .unwrap_or_default();
    (parts.status.as_u16(), StreamMessage { headers, body })
}
