//! The receiving side of a stream connection: the preface's token is checked against the
//! tokens granted, then each request is rebuilt and handed to the service it was granted
//! for — through all of that service's handlers, as any SOAP message — and its reply
//! written back in the stream's form (or whole, in a RAW frame, when it has no shape or no
//! schema is left).

use super::codec::{CodecLimits, Decoded, Decoder, Encoder, FrameHead, StreamMessage};
use super::frame::{FrameReader, MAGIC, read_raw, write_error, write_raw};
use super::lock;
use super::{FrameKind, WireError};
use bytes::BytesMut;
use futures_util::FutureExt;
use std::collections::HashMap;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;

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

/// Serves one accepted connection until it ends, or until `shutdown` completes: then no
/// more frames are read, the requests in flight are answered and the connection closed.
/// The error says why it ended early.
pub async fn serve_connection<T>(
    mut io: T,
    tokens: &StreamTokens,
    limits: AcceptLimits,
    handoff: Arc<dyn Handoff>,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), WireError>
where
    T: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let max_payload = limits.codec.max_message_bytes + 64 * 1024;
    let mut reader = FrameReader::new(max_payload);
    let token = tokio::time::timeout(limits.frame_timeout, reader.preface(&mut io))
        .await
        .map_err(|_| timed_out())??;
    let Some(target) = tokens.redeem(&token) else {
        let mut refusal = MAGIC.to_vec();
        refusal.push(1);
        let _ = io.write_all(&refusal).await;
        return Err(WireError::Malformed("an unknown or used stream token"));
    };
    let mut accepted = MAGIC.to_vec();
    accepted.push(0);
    io.write_all(&accepted).await?;
    io.flush().await?;
    let (done, replies) = mpsc::unbounded_channel();
    let mut connection = Connection {
        decoder: Decoder::new(limits.codec),
        encoder: Encoder::new(limits.codec),
        in_flight: 0,
        done,
        replies,
        out: BytesMut::new(),
        limits,
        target,
        handoff,
    };
    let ended = connection
        .run(&mut io, &mut reader, std::pin::pin!(shutdown))
        .await;
    if let Err(e) = &ended {
        write_error(&mut connection.out, 0, &e.to_string());
    }
    let _ = io.write_all(&connection.out).await;
    let _ = io.shutdown().await;
    ended
}

/// A request handled: its id, and its reply (`None`: handling it panicked).
type Handled = (u32, Option<(u16, StreamMessage)>);

/// One connection's state. Each request is handled on a task of its own (so a stream's
/// requests use every core); the replies come back to the connection's task, which
/// alone reads frames and writes — no writer task between.
struct Connection {
    decoder: Decoder,
    encoder: Encoder,
    in_flight: usize,
    done: mpsc::UnboundedSender<Handled>,
    replies: mpsc::UnboundedReceiver<Handled>,
    out: BytesMut,
    limits: AcceptLimits,
    target: Arc<str>,
    handoff: Arc<dyn Handoff>,
}

impl Connection {
    async fn run<T: AsyncRead + AsyncWrite + Unpin>(
        &mut self,
        io: &mut T,
        reader: &mut FrameReader,
        mut shutdown: Pin<&mut (impl Future<Output = ()> + Send)>,
    ) -> Result<(), WireError> {
        let max_in_flight = self.limits.max_in_flight.max(1);
        loop {
            if !self.out.is_empty() {
                io.write_all(&self.out).await?;
                self.out.clear();
            }
            let wait = if reader.has_partial() {
                self.limits.frame_timeout
            } else {
                self.limits.idle_timeout
            };
            let can_read = self.in_flight < max_in_flight;
            tokio::select! {
                () = &mut shutdown => return self.finish().await,
                Some((id, handled)) = self.replies.recv(), if self.in_flight > 0 => {
                    self.reply(id, handled);
                    // Every reply ready now goes out in the same write.
                    while let Ok((id, handled)) = self.replies.try_recv() {
                        self.reply(id, handled);
                    }
                }
                read = tokio::time::timeout(wait, reader.next(io)), if can_read => match read {
                    Err(_) if reader.has_partial() => return Err(timed_out()),
                    Err(_) if self.in_flight == 0 => return Ok(()),
                    Err(_) => {}
                    Ok(Ok(None)) => return self.finish().await,
                    Ok(Ok(Some((kind, payload)))) => self.take(kind, &payload)?,
                    Ok(Err(e)) => return Err(e),
                },
            }
        }
    }

    /// The sending side closed its half, or the server is stopping: answer what is in
    /// flight, then end.
    async fn finish(&mut self) -> Result<(), WireError> {
        while self.in_flight > 0 {
            let Some((id, handled)) = self.replies.recv().await else {
                break;
            };
            self.reply(id, handled);
        }
        Ok(())
    }

    /// Takes one frame: a schema, or a request to hand off.
    fn take(&mut self, kind: FrameKind, payload: &[u8]) -> Result<(), WireError> {
        let decoded = match kind {
            FrameKind::Schema | FrameKind::Message => self.decoder.decode(kind, payload)?,
            FrameKind::Raw => Some(read_raw(payload, false, self.limits.codec.max_values)?),
            FrameKind::Reply | FrameKind::Error => {
                return Err(WireError::Malformed(
                    "a reply or error from the sending side",
                ));
            }
        };
        if let Some(Decoded {
            head: FrameHead::Request(id),
            message,
        }) = decoded
        {
            let handling =
                AssertUnwindSafe(self.handoff.handle(self.target.clone(), message)).catch_unwind();
            let done = self.done.clone();
            self.in_flight += 1;
            tokio::spawn(async move {
                let _ = done.send((id, handling.await.ok()));
            });
        }
        Ok(())
    }

    /// Writes a reply into the output: in the stream's form, or whole when it does not
    /// fit; an ERROR frame when handling it panicked.
    fn reply(&mut self, id: u32, handled: Option<(u16, StreamMessage)>) {
        self.in_flight -= 1;
        match handled {
            Some((status, message)) => {
                let head = FrameHead::Reply(id, status);
                if self.encoder.encode(&mut self.out, head, &message).is_err() {
                    write_raw(&mut self.out, head, &message);
                }
            }
            None => write_error(&mut self.out, id, "the request could not be handled"),
        }
    }
}

fn timed_out() -> WireError {
    WireError::Io(std::io::ErrorKind::TimedOut.into())
}
