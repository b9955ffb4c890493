//! The sending side of one stream connection: requests are numbered and written in order
//! by one writer task (so the encoder's last values match the far side's), replies are
//! read by one reader task and handed to whoever waits for them.

use super::codec::{CodecLimits, Decoder, EncodeError, Encoder, FrameHead, StreamMessage};
use super::frame::{self, FrameReader, MAGIC, read_error, read_raw};
use super::lock;
use super::{FrameKind, WireError};
use bytes::BytesMut;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc, oneshot};

/// How a link behaves.
#[derive(Debug, Clone, Copy)]
pub struct StreamLinkSettings {
    /// Bounds of both directions (the grant's).
    pub limits: CodecLimits,
    /// Most requests awaiting an answer at once (the grant's).
    pub max_in_flight: usize,
    /// Longest wait for the far side's answer to the preface.
    pub handshake_timeout: Duration,
}

/// Why a request did not get its answer over the link.
#[derive(Debug, thiserror::Error)]
pub enum StreamLinkError {
    /// Not sent: it does not fit the stream. Send it as plain SOAP.
    #[error("not sent on the stream: {0}")]
    Unstreamed(#[from] EncodeError),
    /// Not sent: the link is closed.
    #[error("the stream is closed")]
    Closed,
    /// Sent, and the link was lost before its answer came: it may have been processed.
    #[error("the stream was lost after the request was sent")]
    Lost,
    /// The far side failed while handling it (it may have been processed), in its words.
    #[error("the far side refused the request: {0}")]
    Refused(String),
}

/// A reply as the link hands it back: the HTTP status and the message.
pub type StreamReply = (u16, StreamMessage);

type Waiter = oneshot::Sender<Result<StreamReply, StreamLinkError>>;

/// A request written and not yet answered: who waits, and its in-flight permit.
type Pending = Arc<Mutex<HashMap<u32, (Waiter, OwnedSemaphorePermit)>>>;

struct Outgoing {
    message: StreamMessage,
    waiter: Waiter,
    permit: OwnedSemaphorePermit,
}

/// One open stream connection.
#[derive(Debug)]
pub struct StreamLink {
    queue: mpsc::Sender<Outgoing>,
    in_flight: Arc<Semaphore>,
    closed: Arc<AtomicBool>,
}

impl std::fmt::Debug for Outgoing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Outgoing").finish_non_exhaustive()
    }
}

impl StreamLink {
    /// Presents `token` on `io` and, once the far side accepts it, starts the link.
    pub async fn open<T>(
        mut io: T,
        token: &str,
        settings: StreamLinkSettings,
    ) -> Result<StreamLink, WireError>
    where
        T: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        io.write_all(&frame::preface(token)).await?;
        io.flush().await?;
        let mut answer = [0u8; 6];
        tokio::time::timeout(settings.handshake_timeout, io.read_exact(&mut answer))
            .await
            .map_err(|_| WireError::Io(std::io::ErrorKind::TimedOut.into()))??;
        if answer[..5] != MAGIC {
            return Err(WireError::Malformed("the far side is not a lather stream"));
        }
        if answer[5] != 0 {
            return Err(WireError::Malformed(
                "the far side refused the stream token",
            ));
        }
        let (read, write) = tokio::io::split(io);
        let pending: Pending = Arc::default();
        let closed = Arc::new(AtomicBool::new(false));
        let (queue, outgoing) = mpsc::channel(settings.max_in_flight.max(1));
        tokio::spawn(write_loop(
            write,
            outgoing,
            Encoder::new(settings.limits),
            pending.clone(),
            closed.clone(),
        ));
        tokio::spawn(read_loop(
            read,
            Decoder::new(settings.limits),
            settings.limits,
            pending,
            closed.clone(),
        ));
        Ok(StreamLink {
            queue,
            in_flight: Arc::new(Semaphore::new(settings.max_in_flight.max(1))),
            closed,
        })
    }

    /// Whether the link can no longer carry requests.
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Sends `message` as a request and waits for its reply.
    pub async fn call(&self, message: StreamMessage) -> Result<StreamReply, StreamLinkError> {
        if self.is_closed() {
            return Err(StreamLinkError::Closed);
        }
        let permit = self
            .in_flight
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| StreamLinkError::Closed)?;
        let (waiter, answer) = oneshot::channel();
        self.queue
            .send(Outgoing {
                message,
                waiter,
                permit,
            })
            .await
            .map_err(|_| StreamLinkError::Closed)?;
        answer.await.unwrap_or(Err(StreamLinkError::Lost))
    }
}

async fn write_loop<W: AsyncWrite + Unpin>(
    mut write: W,
    mut outgoing: mpsc::Receiver<Outgoing>,
    mut encoder: Encoder,
    pending: Pending,
    closed: Arc<AtomicBool>,
) {
    let mut next_id: u32 = 1;
    let mut out = BytesMut::new();
    while let Some(first) = outgoing.recv().await {
        if closed.load(Ordering::Acquire) {
            let _ = first.waiter.send(Err(StreamLinkError::Closed));
            continue;
        }
        // One turn of the scheduler lets requests ready on other tasks join this write:
        // under load, several messages share a syscall (and the far side's wake-up).
        tokio::task::yield_now().await;
        let mut batch = Some(first);
        // Everything already queued goes out in one write.
        while let Some(item) = batch.take().or_else(|| outgoing.try_recv().ok()) {
            let id = next_id;
            next_id = next_id.wrapping_add(1).max(1);
            match encoder.encode(&mut out, FrameHead::Request(id), &item.message) {
                Ok(()) => {
                    lock(&pending).insert(id, (item.waiter, item.permit));
                }
                Err(e) => {
                    let _ = item.waiter.send(Err(StreamLinkError::Unstreamed(e)));
                }
            }
            if out.len() > 256 * 1024 {
                break;
            }
        }
        if out.is_empty() {
            continue;
        }
        let written = write.write_all(&out).await;
        out.clear();
        if written.is_err() || write.flush().await.is_err() {
            break;
        }
    }
    closed.store(true, Ordering::Release);
    fail_all(&pending);
    // What was queued and never written is safe to send another way.
    outgoing.close();
    while let Ok(item) = outgoing.try_recv() {
        let _ = item.waiter.send(Err(StreamLinkError::Closed));
    }
    let _ = write.shutdown().await;
}

async fn read_loop<R: AsyncRead + Unpin>(
    mut read: R,
    mut decoder: Decoder,
    limits: CodecLimits,
    pending: Pending,
    closed: Arc<AtomicBool>,
) {
    let mut reader = FrameReader::new(limits.max_message_bytes + 64 * 1024);
    loop {
        let (kind, payload) = match reader.next(&mut read).await {
            Ok(Some(frame)) => frame,
            Ok(None) => break,
            Err(e) => {
                tracing::debug!(error = %e, "stream link read failed");
                break;
            }
        };
        let answered = match kind {
            FrameKind::Schema | FrameKind::Reply => decoder.decode(kind, &payload),
            FrameKind::Raw => read_raw(&payload, true, limits.max_values).map(Some),
            FrameKind::Error => match read_error(&payload) {
                Ok(failure) if failure.request != 0 => {
                    if let Some((waiter, _)) = lock(&pending).remove(&failure.request) {
                        let _ = waiter.send(Err(StreamLinkError::Refused(failure.reason)));
                    }
                    continue;
                }
                Ok(failure) => {
                    tracing::warn!(reason = %failure.reason, "the far side ended the stream");
                    break;
                }
                Err(e) => Err(e),
            },
            FrameKind::Message => Err(WireError::Malformed("a request from the far side")),
        };
        match answered {
            Ok(None) => {}
            Ok(Some(decoded)) => {
                if let FrameHead::Reply(id, status) = decoded.head
                    && let Some((waiter, _)) = lock(&pending).remove(&id)
                {
                    let _ = waiter.send(Ok((status, decoded.message)));
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "stream link out of step; closing it");
                break;
            }
        }
    }
    closed.store(true, Ordering::Release);
    fail_all(&pending);
}

/// Answers every request written and not answered: lost, as it may have been processed.
fn fail_all(pending: &Pending) {
    for (_, (waiter, _)) in lock(pending).drain() {
        let _ = waiter.send(Err(StreamLinkError::Lost));
    }
}
