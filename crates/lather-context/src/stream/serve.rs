//! The receiving side of a stream connection: the preface's token is checked against the
//! tokens granted, then each request is rebuilt and handed to the service it was granted
//! for — through all of that service's handlers, as any SOAP message — and its reply
//! written back in the stream's form (or whole, in a RAW frame, when it has no shape or no
//! schema is left).

use super::codec::{CodecLimits, Decoder, Encoder, Envelope, StreamMessage};
use super::frame::{MAGIC, read_frame, read_preface, read_raw, write_error, write_raw};
use super::{FrameKind, WireError};
use bytes::BytesMut;
use futures_util::FutureExt;
use std::collections::HashMap;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{Semaphore, mpsc};

/// Bounds of the receiving side.
#[derive(Debug, Clone, Copy)]
pub struct AcceptLimits {
    /// Bounds of both directions.
    pub codec: CodecLimits,
    /// Most requests of one connection being handled at once; beyond it the connection
    /// is not read until one is answered.
    pub max_in_flight: usize,
    /// Longest wait for the preface, and for the rest of a frame once it has begun.
    pub frame_timeout: Duration,
    /// A connection with nothing in flight that sends nothing for this long is closed.
    pub idle_timeout: Duration,
}

/// What a granted token stands for: the path of the service it was granted by.
#[derive(Debug)]
pub struct StreamTokens {
    granted: Mutex<HashMap<String, (Arc<str>, Instant)>>,
    lifetime: Duration,
    max: usize,
}

impl StreamTokens {
    /// Tokens good for `lifetime`, at most `max` waiting at once.
    pub fn new(lifetime: Duration, max: usize) -> Self {
        StreamTokens {
            granted: Mutex::new(HashMap::new()),
            lifetime,
            max,
        }
    }

    /// How long a token stays good.
    pub fn lifetime(&self) -> Duration {
        self.lifetime
    }

    /// A new single-use token for the service at `target`; `None` when `max` tokens wait.
    pub fn grant(&self, target: &str) -> Option<String> {
        let mut granted = lock(&self.granted);
        let now = Instant::now();
        granted.retain(|_, (_, expires)| *expires > now);
        if granted.len() >= self.max {
            return None;
        }
        let mut raw = [0u8; 16];
        getrandom::fill(&mut raw).ok()?;
        let token: String = raw.iter().map(|b| format!("{b:02x}")).collect();
        granted.insert(token.clone(), (Arc::from(target), now + self.lifetime));
        Some(token)
    }

    /// The service a token was granted for, once: a token is good for one connection.
    pub fn redeem(&self, token: &str) -> Option<Arc<str>> {
        let (target, expires) = lock(&self.granted).remove(token)?;
        (expires > Instant::now()).then_some(target)
    }
}

/// Where rebuilt requests go: the service at `target`, as an HTTP request would.
pub trait Handoff: Send + Sync + 'static {
    /// Handles one request; the reply's HTTP status and message.
    fn handle(
        &self,
        target: Arc<str>,
        message: StreamMessage,
    ) -> Pin<Box<dyn Future<Output = (u16, StreamMessage)> + Send + 'static>>;
}

enum Out {
    Reply(u32, u16, StreamMessage),
    Error(u32, String),
}

/// Serves one accepted connection until it ends. The error says why it ended early.
pub async fn serve_connection<T>(
    io: T,
    tokens: &StreamTokens,
    limits: AcceptLimits,
    handoff: Arc<dyn Handoff>,
) -> Result<(), WireError>
where
    T: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (read, mut write) = tokio::io::split(io);
    let mut read = BufReader::new(read);
    let token = tokio::time::timeout(limits.frame_timeout, read_preface(&mut read))
        .await
        .map_err(|_| WireError::Io(std::io::ErrorKind::TimedOut.into()))??;
    let Some(target) = tokens.redeem(&token) else {
        let mut refusal = MAGIC.to_vec();
        refusal.push(1);
        let _ = write.write_all(&refusal).await;
        return Err(WireError::Malformed("an unknown or used stream token"));
    };
    let mut accepted = MAGIC.to_vec();
    accepted.push(0);
    write.write_all(&accepted).await?;
    write.flush().await?;
    let (out, outgoing) = mpsc::unbounded_channel();
    let writer = tokio::spawn(write_loop(write, outgoing, Encoder::new(limits.codec)));
    let ended = read_loop(&mut read, limits, &target, &handoff, &out).await;
    if let Err(e) = &ended {
        let _ = out.send(Out::Error(0, e.to_string()));
    }
    drop(out);
    let _ = writer.await;
    ended
}

async fn read_loop<R: AsyncRead + Unpin>(
    read: &mut BufReader<R>,
    limits: AcceptLimits,
    target: &Arc<str>,
    handoff: &Arc<dyn Handoff>,
    out: &mpsc::UnboundedSender<Out>,
) -> Result<(), WireError> {
    let mut decoder = Decoder::new(limits.codec);
    let in_flight = Arc::new(Semaphore::new(limits.max_in_flight.max(1)));
    let max_payload = limits.codec.max_message_bytes + 64 * 1024;
    loop {
        match tokio::time::timeout(limits.idle_timeout, read.fill_buf()).await {
            Err(_) if in_flight.available_permits() == limits.max_in_flight.max(1) => {
                return Ok(());
            }
            Err(_) => continue,
            Ok(Ok([])) => return Ok(()),
            Ok(Ok(_)) => {}
            Ok(Err(e)) => return Err(e.into()),
        }
        let frame = tokio::time::timeout(limits.frame_timeout, read_frame(read, max_payload))
            .await
            .map_err(|_| WireError::Io(std::io::ErrorKind::TimedOut.into()))??;
        let Some((kind, payload)) = frame else {
            return Ok(());
        };
        let decoded = match kind {
            FrameKind::Schema | FrameKind::Message => decoder.decode(kind, &payload)?,
            FrameKind::Raw => Some(read_raw(&payload, false, limits.codec.max_values)?),
            FrameKind::Reply | FrameKind::Error => {
                return Err(WireError::Malformed(
                    "a reply or error from the sending side",
                ));
            }
        };
        let Some(decoded) = decoded else { continue };
        let Envelope::Request(id) = decoded.envelope else {
            continue;
        };
        let permit = in_flight
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| WireError::Malformed("closed"))?;
        let (handoff, target, out) = (handoff.clone(), target.clone(), out.clone());
        tokio::spawn(async move {
            let handled = AssertUnwindSafe(handoff.handle(target, decoded.message))
                .catch_unwind()
                .await;
            let _ = out.send(match handled {
                Ok((status, reply)) => Out::Reply(id, status, reply),
                Err(_) => Out::Error(id, "the request could not be handled".to_owned()),
            });
            drop(permit);
        });
    }
}

async fn write_loop<W: AsyncWrite + Unpin>(
    mut write: W,
    mut outgoing: mpsc::UnboundedReceiver<Out>,
    mut encoder: Encoder,
) {
    let mut buf = BytesMut::new();
    while let Some(first) = outgoing.recv().await {
        let mut next = Some(first);
        while let Some(item) = next.take().or_else(|| outgoing.try_recv().ok()) {
            match item {
                Out::Reply(id, status, message) => {
                    let envelope = Envelope::Reply(id, status);
                    if encoder.encode(&mut buf, envelope, &message).is_err() {
                        write_raw(&mut buf, envelope, &message);
                    }
                }
                Out::Error(id, reason) => write_error(&mut buf, id, &reason),
            }
            if buf.len() > 256 * 1024 {
                break;
            }
        }
        if write.write_all(&buf).await.is_err() || write.flush().await.is_err() {
            return;
        }
        buf.clear();
    }
    let _ = write.shutdown().await;
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
