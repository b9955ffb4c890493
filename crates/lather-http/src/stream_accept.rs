//! Negotiated message streams, receiving side: the `[stream]` listener, the answer to
//! `OpenStream`, and the handoff of each rebuilt request to its service along the same
//! path as an HTTP request (admission, handlers, metrics), so handlers and services
//! cannot tell a stream's messages from others.

use crate::counted::{ByteCounts, Counted};
use crate::dispatch;
use crate::peer::Peer;
use crate::respond::{self, HttpResponse};
use crate::service::Service;
use crate::state::State;
use bytes::Bytes;
use futures_util::FutureExt;
use http::{HeaderName, HeaderValue, Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use lather_config::StreamConfig;
use lather_context::stream::duplex::{
    self, BodyReader, ChannelBody, Duplex, H2_CONTENT_TYPE, TRANSPORT_H2,
};
use lather_context::stream::negotiation::{self, Grant, Offer, TRANSPORT_TCP};
use lather_context::stream::{
    AcceptLimits, CodecLimits, Handoff, REPRESENTATION, StreamMessage, StreamTokens,
    serve_connection,
};
use lather_envelope::{Envelope, EnvelopeBuilder, Fault, FaultKind, QName, SoapVersion};
use std::future::Future;
use std::net::SocketAddr;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

/// Most tokens granted and not yet used at once.
const MAX_WAITING_TOKENS: usize = 1024;

/// The receiving side's state: tokens granted, the port, the bounds, the counters.
#[derive(Debug)]
pub(crate) struct StreamAcceptor {
    tokens: StreamTokens,
    port: u16,
    limits: AcceptLimits,
    connections: Arc<Semaphore>,
    /// Stream connections that ended cleanly.
    pub(crate) served: AtomicU64,
    /// Stream connections refused (cap, token) or ended by an error.
    pub(crate) failed: AtomicU64,
    /// Bytes read from and written to stream connections.
    pub(crate) bytes: Arc<ByteCounts>,
}

impl StreamAcceptor {
    /// Binds `config.listen`.
    pub(crate) async fn bind(
        config: &StreamConfig,
        max_message_bytes: usize,
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
        };
        Ok((listener, acceptor))
    }

    /// The port told to senders: `public_port`, else the one bound.
    pub(crate) fn port(&self) -> u16 {
        self.port
    }
}

/// Whether `operation` is the stream negotiation.
pub(crate) fn is_open_stream(operation: &QName) -> bool {
    operation.namespace() == negotiation::NS && operation.local() == "OpenStream"
}

/// Answers `OpenStream` for `service`: a grant when the service accepts streams and one
/// of the offered representations and transports is spoken here, else `StreamRefused`.
pub(crate) fn open_stream(
    state: &State,
    service: &Service,
    envelope: &Envelope,
    version: SoapVersion,
) -> Result<HttpResponse, Fault> {
    let acceptor = match &state.streams {
        Some(acceptor) if service.accept_streams => acceptor,
        _ => {
            return Err(negotiation::refused(format!(
                "{} does not accept message streams",
                service.name
            )));
        }
    };
    let offer = Offer::from_envelope(envelope, &state.limits)?;
    if !offer.representations.iter().any(|r| r == REPRESENTATION) {
        return Err(negotiation::refused(format!(
            "no representation offered is spoken here (only {REPRESENTATION})"
        )));
    }
    // TCP when offered (a connection of its own), else HTTP/2 (one request on this port).
    let transport = [TRANSPORT_TCP, TRANSPORT_H2]
        .into_iter()
        .find(|t| offer.transports.iter().any(|o| o == t))
        .ok_or_else(|| {
            negotiation::refused(format!(
                "no transport offered is spoken here (only {TRANSPORT_TCP} and {TRANSPORT_H2})"
            ))
        })?;
    let token = acceptor.tokens.grant(&service.path).ok_or_else(|| {
        Fault::with_reason(
            FaultKind::ServerBusy,
            "too many message streams are being opened; retry later",
        )
    })?;
    let limits = &acceptor.limits;
    let grant = Grant {
        token,
        representation: REPRESENTATION.to_owned(),
        transport: transport.to_owned(),
        port: if transport == TRANSPORT_TCP {
            acceptor.port
        } else {
            state.listen.port()
        },
        max_schemas: limits.codec.max_schemas as u32,
        max_in_flight: limits.max_in_flight as u32,
        max_message_bytes: u32::try_from(limits.codec.max_message_bytes).unwrap_or(u32::MAX),
        token_lifetime_s: acceptor.tokens.lifetime().as_secs() as u32,
    };
    tracing::debug!(service = %service.name, operation = %offer.operation, "message stream granted");
    let body = EnvelopeBuilder::new(version)
        .body(Bytes::from(grant.to_xml()))
        .build();
    Ok(respond::soap(StatusCode::OK, version, body))
}

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
        let handoff = Arc::new(DispatchHandoff {
            state: state.clone(),
            peer,
        });
        let acceptor = acceptor.clone();
        tokio::spawn(async move {
            let _slot = slot;
            let stream = Counted::new(stream, acceptor.bytes.clone());
            let ended = serve_connection(stream, &acceptor.tokens, acceptor.limits, handoff);
            match ended.await {
                Ok(()) => {
                    acceptor.served.fetch_add(1, Ordering::Relaxed);
                }
                Err(e) => {
                    acceptor.failed.fetch_add(1, Ordering::Relaxed);
                    tracing::debug!(%peer, error = %e, "stream connection ended");
                }
            }
        });
    }
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
/// of the connection, the answer's body ours. `busy` keeps the HTTP connection from
/// counting as idle while the stream lives.
pub(crate) fn h2_stream(
    state: Arc<State>,
    req: Request<hyper::body::Incoming>,
    peer: SocketAddr,
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
    let io = Counted::new(
        Duplex::new(BodyReader::new(req.into_body()), writer),
        acceptor.bytes.clone(),
    );
    let handoff = Arc::new(DispatchHandoff { state, peer });
    tokio::spawn(async move {
        let _held = (slot, busy);
        match serve_connection(io, &acceptor.tokens, acceptor.limits, handoff).await {
            Ok(()) => acceptor.served.fetch_add(1, Ordering::Relaxed),
            Err(e) => {
                tracing::debug!(%peer, error = %e, "HTTP/2 stream ended");
                acceptor.failed.fetch_add(1, Ordering::Relaxed)
            }
        };
    });
    let mut response = Response::new(http_body_util::Either::Right(body));
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static(H2_CONTENT_TYPE),
    );
    response
}

/// Hands rebuilt requests to the server's dispatch, as from `peer`.
struct DispatchHandoff {
    state: Arc<State>,
    peer: SocketAddr,
}

impl Handoff for DispatchHandoff {
    fn handle(
        &self,
        target: Arc<str>,
        message: StreamMessage,
    ) -> Pin<Box<dyn Future<Output = (u16, StreamMessage)> + Send + 'static>> {
        let state = self.state.clone();
        let peer = self.peer;
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
            if let Ok(host) = HeaderValue::from_str(&state.listen.to_string()) {
                headers.insert(http::header::HOST, host);
            }
            request.extensions_mut().insert(Peer(peer));
            let pool = state.cpu_pool.clone();
            let response = AssertUnwindSafe(pool.scope(dispatch::handle(state, request)))
                .catch_unwind()
                .await
                .unwrap_or_else(|_| {
                    let fault = Fault::with_reason(
                        FaultKind::Internal,
                        "the request handler failed unexpectedly",
                    );
                    respond::fault(&fault, SoapVersion::V12)
                });
            reply_message(response).await
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
