//! The sending side's streams, one per backend and operation: negotiated in the
//! background on the first message (which, like every message until the stream is open,
//! goes as plain SOAP/HTTP), used while open, negotiated again after the link is lost or
//! once the retry interval after a refusal has passed.

use super::REPRESENTATION;
use super::codec::{CodecLimits, StreamMessage};
use super::duplex::{BodyReader, ChannelWriter, Duplex, H2_CONTENT_TYPE, TRANSPORT_H2, channel};
use super::link::{StreamLink, StreamLinkError, StreamLinkSettings};
use super::lock;
use super::negotiation::{ACTION, Grant, Offer, TRANSPORT_TCP};
use lather_client::{Call, Client};
use lather_envelope::QName;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What the sender does with a request that was written to a stream lost before its
/// answer came (it may have been processed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnError {
    /// Answer with a fault: never risk processing it twice (the default).
    #[default]
    Fault,
    /// Send it again as plain SOAP/HTTP: for idempotent operations.
    Resend,
}

impl OnError {
    /// The word used in configuration and in the negotiation.
    pub fn as_str(self) -> &'static str {
        match self {
            OnError::Fault => "fault",
            OnError::Resend => "resend",
        }
    }
}

/// What carries a stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StreamTransport {
    /// A TCP connection of its own, to the port the far side grants (the default).
    #[default]
    Tcp,
    /// One HTTP/2 request to the service's own URL (h2c), where only HTTP gets through.
    H2,
}

impl StreamTransport {
    /// The name used in the negotiation.
    pub fn as_str(self) -> &'static str {
        match self {
            StreamTransport::Tcp => TRANSPORT_TCP,
            StreamTransport::H2 => TRANSPORT_H2,
        }
    }
}

/// Why a message goes as plain SOAP/HTTP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unstreamed {
    /// No stream is open (yet) for its backend and operation, or the peer refused one.
    NoStream,
    /// It does not fit the stream: no shape, no schema left, or too large.
    Shape,
    /// The stream closed before it was written.
    Closed,
    /// It was written and lost, and the policy is to resend.
    Resent,
}

/// How one message went.
#[derive(Debug)]
pub enum SendOutcome {
    /// Answered over the stream: the HTTP status and the reply.
    Answered(u16, StreamMessage),
    /// Send it as plain SOAP/HTTP.
    Plain(Unstreamed),
    /// Written to a stream that was lost before the answer, and the policy is to fault.
    Lost,
}

/// Counters of a sender, for metrics.
#[derive(Debug, Default)]
pub struct SenderStats {
    /// Messages answered over a stream.
    pub streamed: AtomicU64,
    /// Messages sent plain because no stream was open.
    pub plain_no_stream: AtomicU64,
    /// Messages sent plain because they did not fit the stream.
    pub plain_shape: AtomicU64,
    /// Messages sent plain because the stream closed under them (or was lost, when resent).
    pub plain_closed: AtomicU64,
    /// Messages lost with a stream and answered with a fault.
    pub lost: AtomicU64,
    /// Streams opened.
    pub opened: AtomicU64,
    /// Negotiations that failed (refused, not lather, unreachable).
    pub refused: AtomicU64,
}

/// How a sender negotiates.
#[derive(Debug, Clone)]
pub struct SenderSettings {
    /// What carries the streams.
    pub transport: StreamTransport,
    /// The policy for lost requests, also offered to the far side.
    pub on_error: OnError,
    /// How long after a failed negotiation the next is tried.
    pub retry: Duration,
    /// Bounds on negotiation and connecting.
    pub timeout: Duration,
    /// The largest message this side sends or takes.
    pub max_message_bytes: usize,
    /// Most backend-and-operation pairs with a stream.
    pub max_streams: usize,
    /// The TLS towards `https://` peers, for the negotiation and the stream connection
    /// (a gateway's `upstream_*` keys; by default the system's CAs).
    pub tls: lather_client::OutboundTls,
}

/// The routes by upstream, then by operation (a few per upstream, searched in order, so
/// a message's lookup allocates nothing).
type Routes = HashMap<http::Uri, Vec<(Option<QName>, Route)>>;

enum Route {
    Negotiating,
    Open(Arc<StreamLink>),
    Plain(Instant),
}

/// The streams of one sending service (a gateway).
#[derive(Clone)]
pub struct StreamSender {
    inner: Arc<Inner>,
}

struct Inner {
    settings: SenderSettings,
    client: Client,
    routes: Mutex<Routes>,
    stats: SenderStats,
}

impl std::fmt::Debug for StreamSender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamSender")
            .field("settings", &self.inner.settings)
            .finish_non_exhaustive()
    }
}

impl StreamSender {
    /// A sender with no streams yet.
    pub fn new(settings: SenderSettings) -> Result<Self, lather_client::ClientError> {
        let client = Client::builder()
            .request_timeout(settings.timeout)
            .connect_timeout(settings.timeout)
            .tls(settings.tls.clone())
            .build()?;
        Ok(StreamSender {
            inner: Arc::new(Inner {
                settings,
                client,
                routes: Mutex::new(HashMap::new()),
                stats: SenderStats::default(),
            }),
        })
    }

    /// The sender's counters.
    pub fn stats(&self) -> &SenderStats {
        &self.inner.stats
    }

    /// Sends `message` for `operation` to the service at `url` over its stream, when one
    /// is open; otherwise starts negotiating one and says to send it plain.
    pub async fn send(
        &self,
        url: &http::Uri,
        operation: Option<&QName>,
        message: StreamMessage,
    ) -> SendOutcome {
        let stats = &self.inner.stats;
        let Some(link) = self.link(url, operation) else {
            stats.plain_no_stream.fetch_add(1, Ordering::Relaxed);
            return SendOutcome::Plain(Unstreamed::NoStream);
        };
        match link.call(message).await {
            Ok((status, reply)) => {
                stats.streamed.fetch_add(1, Ordering::Relaxed);
                SendOutcome::Answered(status, reply)
            }
            Err(StreamLinkError::Unstreamed(e)) => {
                tracing::debug!(?operation, error = %e, "message sent as plain SOAP");
                stats.plain_shape.fetch_add(1, Ordering::Relaxed);
                SendOutcome::Plain(Unstreamed::Shape)
            }
            Err(StreamLinkError::Closed) => {
                stats.plain_closed.fetch_add(1, Ordering::Relaxed);
                SendOutcome::Plain(Unstreamed::Closed)
            }
            // The far side failed while handling it: it may have been processed, as a
            // request lost with its stream.
            Err(StreamLinkError::Lost | StreamLinkError::Refused(_))
                if self.inner.settings.on_error == OnError::Resend =>
            {
                stats.plain_closed.fetch_add(1, Ordering::Relaxed);
                SendOutcome::Plain(Unstreamed::Resent)
            }
            Err(StreamLinkError::Lost | StreamLinkError::Refused(_)) => {
                stats.lost.fetch_add(1, Ordering::Relaxed);
                SendOutcome::Lost
            }
        }
    }

    /// The open link for `url` and `operation`, starting a negotiation when there is none
    /// and none is under way or waiting out its retry interval.
    fn link(&self, url: &http::Uri, operation: Option<&QName>) -> Option<Arc<StreamLink>> {
        let mut routes = lock(&self.inner.routes);
        let known = routes
            .get(url)
            .and_then(|ops| ops.iter().find(|(op, _)| op.as_ref() == operation));
        match known.map(|(_, route)| route) {
            Some(Route::Open(link)) if !link.is_closed() => return Some(link.clone()),
            Some(Route::Negotiating) => return None,
            Some(Route::Plain(until)) if Instant::now() < *until => return None,
            Some(_) => {}
            None if routes.values().map(Vec::len).sum::<usize>()
                >= self.inner.settings.max_streams =>
            {
                return None;
            }
            None => {}
        }
        set_route(&mut routes, url, operation, Route::Negotiating);
        drop(routes);
        let inner = self.inner.clone();
        let url = url.clone();
        let operation = operation.cloned();
        tokio::spawn(async move {
            let named = operation
                .as_ref()
                .map_or_else(String::new, ToString::to_string);
            let route = match negotiate(&inner, &url, &named).await {
                Ok(link) => {
                    inner.stats.opened.fetch_add(1, Ordering::Relaxed);
                    tracing::info!(operation = %named, "message stream opened");
                    Route::Open(Arc::new(link))
                }
                Err(why) => {
                    inner.stats.refused.fetch_add(1, Ordering::Relaxed);
                    tracing::info!(upstream = %url, operation = %named, %why, "no message stream; staying on SOAP/HTTP");
                    Route::Plain(Instant::now() + inner.settings.retry)
                }
            };
            set_route(&mut lock(&inner.routes), &url, operation.as_ref(), route);
        });
        None
    }
}

/// Sets the route of `url` and `operation`.
fn set_route(routes: &mut Routes, url: &http::Uri, operation: Option<&QName>, route: Route) {
    let ops = routes.entry(url.clone()).or_default();
    match ops.iter_mut().find(|(op, _)| op.as_ref() == operation) {
        Some(slot) => slot.1 = route,
        None => ops.push((operation.cloned(), route)),
    }
}

/// Why a negotiation failed, in words for the log.
type Why = String;

async fn negotiate(inner: &Inner, url: &http::Uri, operation: &str) -> Result<StreamLink, Why> {
    let settings = &inner.settings;
    let offer = Offer {
        representations: vec![REPRESENTATION.to_owned()],
        transports: vec![settings.transport.as_str().to_owned()],
        on_error: settings.on_error.as_str().to_owned(),
        operation: operation.to_owned(),
    };
    let call = Call::new(offer.to_xml()).action(ACTION);
    let answer = inner
        .client
        .call(&url.to_string(), &call)
        .await
        .map_err(|e| format!("OpenStream failed: {e}"))?;
    let grant = Grant::from_envelope(&answer).map_err(|e| e.to_string())?;
    if grant.representation != REPRESENTATION || grant.transport != settings.transport.as_str() {
        return Err(format!(
            "granted {} over {}, which this side did not offer",
            grant.representation, grant.transport
        ));
    }
    let link_settings = StreamLinkSettings {
        limits: CodecLimits {
            max_schemas: grant.max_schemas as usize,
            max_message_bytes: settings
                .max_message_bytes
                .min(grant.max_message_bytes as usize),
            ..CodecLimits::default()
        },
        max_in_flight: grant.max_in_flight.max(1) as usize,
        handshake_timeout: settings.timeout,
    };
    let https = url.scheme_str() == Some("https");
    let timeout = settings.timeout;
    // TCP: only the port comes from the answer, the host is the one already talked to.
    // HTTP/2: one request on the URL's own port, over TLS when the URL says https.
    let (port, secure) = match settings.transport {
        StreamTransport::Tcp => (grant.port, grant.tls),
        StreamTransport::H2 => (
            url.port_u16().unwrap_or(if https { 443 } else { 80 }),
            https,
        ),
    };
    if https && !secure {
        return Err(
            "the far side grants a stream port without TLS: a stream negotiated over https:// is never carried in the clear"
                .to_owned(),
        );
    }
    let stream = connect(url, port, timeout).await?;
    if !secure {
        return open_link(settings.transport, url, stream, &grant.token, link_settings).await;
    }
    let host = url.host().ok_or("the upstream URL has no host")?;
    let tls = match settings.transport {
        StreamTransport::Tcp => settings.tls.clone(),
        StreamTransport::H2 => settings.tls.with_alpn(&[b"h2"]),
    };
    let stream = tls
        .handshake(host, stream, timeout)
        .await
        .map_err(|e| format!("the stream connection's {e}"))?;
    open_link(settings.transport, url, stream, &grant.token, link_settings).await
}

/// Opens the link over `io` (for HTTP/2, inside its request to `url`) with `token`.
async fn open_link<S>(
    transport: StreamTransport,
    url: &http::Uri,
    io: S,
    token: &str,
    settings: StreamLinkSettings,
) -> Result<StreamLink, Why>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let opened = match transport {
        StreamTransport::Tcp => StreamLink::open(io, token, settings).await,
        StreamTransport::H2 => {
            let duplex = h2_request(url, io, settings.handshake_timeout).await?;
            StreamLink::open(duplex, token, settings).await
        }
    };
    opened.map_err(|e| format!("the stream handshake failed: {e}"))
}

/// A TCP connection to `port` on the host of `url`.
async fn connect(
    url: &http::Uri,
    port: u16,
    timeout: Duration,
) -> Result<tokio::net::TcpStream, Why> {
    let host = url.host().ok_or("the upstream URL has no host")?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let stream = tokio::time::timeout(timeout, tokio::net::TcpStream::connect((host, port)))
        .await
        .map_err(|_| "connecting for the stream timed out".to_owned())?
        .map_err(|e| format!("connecting for the stream failed: {}", e.kind()))?;
    let _ = stream.set_nodelay(true);
    Ok(stream)
}

/// Opens the HTTP/2 request that carries a stream on `stream` (h2c with prior knowledge,
/// or TLS that negotiated h2): its request body and response body as one connection.
async fn h2_request<S>(
    url: &http::Uri,
    stream: S,
    timeout: Duration,
) -> Result<Duplex<BodyReader<hyper::body::Incoming>, ChannelWriter>, Why>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let handshake = hyper::client::conn::http2::handshake(
        hyper_util::rt::TokioExecutor::new(),
        hyper_util::rt::TokioIo::new(stream),
    );
    let (mut send, connection) = tokio::time::timeout(timeout, handshake)
        .await
        .map_err(|_| "the HTTP/2 handshake timed out".to_owned())?
        .map_err(|e| format!("the HTTP/2 handshake failed: {e}"))?;
    tokio::spawn(async move {
        if let Err(e) = connection.await {
            tracing::debug!(error = %e, "HTTP/2 stream connection ended");
        }
    });
    let (writer, body) = channel();
    let request = http::Request::post(url.clone())
        .header(http::header::CONTENT_TYPE, H2_CONTENT_TYPE)
        .body(body)
        .map_err(|e| format!("the HTTP/2 request cannot be made: {e}"))?;
    let response = tokio::time::timeout(timeout, send.send_request(request))
        .await
        .map_err(|_| "the HTTP/2 stream request timed out".to_owned())?
        .map_err(|e| format!("the HTTP/2 stream request failed: {e}"))?;
    if response.status() != http::StatusCode::OK {
        return Err(format!(
            "the HTTP/2 stream request answered {}",
            response.status()
        ));
    }
    Ok(Duplex::new(BodyReader::new(response.into_body()), writer))
}
