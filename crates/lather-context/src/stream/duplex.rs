//! A stream connection carried in one HTTP/2 request, for where plain TCP is not allowed:
//! the request body carries the sending side's bytes, the response body the receiving
//! side's — the same bytes as on TCP. [`Duplex`] makes the two bodies one connection.

use bytes::Bytes;
use hyper::body::{Body, Frame};
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::mpsc;

/// The media type of a stream carried over HTTP/2.
pub const H2_CONTENT_TYPE: &str = "application/vnd.lather.stream";

/// The transport name of a stream carried over HTTP/2.
pub const TRANSPORT_H2: &str = "h2";

/// One connection made of a reading half and a writing half.
#[derive(Debug)]
pub struct Duplex<R, W> {
    read: R,
    write: W,
}

impl<R, W> Duplex<R, W> {
    /// Joins the two halves.
    pub fn new(read: R, write: W) -> Self {
        Duplex { read, write }
    }
}

impl<R: AsyncRead + Unpin, W: Unpin> AsyncRead for Duplex<R, W> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.read).poll_read(cx, buf)
    }
}

impl<R: Unpin, W: AsyncWrite + Unpin> AsyncWrite for Duplex<R, W> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.write).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.write).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.write).poll_shutdown(cx)
    }
}

/// An HTTP body read as bytes (trailers skipped).
#[derive(Debug)]
pub struct BodyReader<B> {
    body: B,
    chunk: Bytes,
}

impl<B> BodyReader<B> {
    /// Reads `body`.
    pub fn new(body: B) -> Self {
        BodyReader {
            body,
            chunk: Bytes::new(),
        }
    }
}

impl<B> AsyncRead for BodyReader<B>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: std::error::Error + Send + Sync + 'static,
{
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        while self.chunk.is_empty() {
            match ready!(Pin::new(&mut self.body).poll_frame(cx)) {
                None => return Poll::Ready(Ok(())),
                Some(Err(e)) => return Poll::Ready(Err(io::Error::other(e))),
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        self.chunk = data;
                    }
                }
            }
        }
        let n = self.chunk.len().min(buf.remaining());
        buf.put_slice(&self.chunk.split_to(n));
        Poll::Ready(Ok(()))
    }
}

/// Bytes written into a channel, read out as an HTTP body ([`ChannelBody`]). What it
/// holds is bounded by the stream's in-flight limit.
#[derive(Debug)]
pub struct ChannelWriter {
    sender: Option<mpsc::UnboundedSender<Bytes>>,
}

/// The body fed by a [`ChannelWriter`].
#[derive(Debug)]
pub struct ChannelBody {
    receiver: mpsc::UnboundedReceiver<Bytes>,
}

/// A writer and the body it feeds.
pub fn channel() -> (ChannelWriter, ChannelBody) {
    let (sender, receiver) = mpsc::unbounded_channel();
    (
        ChannelWriter {
            sender: Some(sender),
        },
        ChannelBody { receiver },
    )
}

impl AsyncWrite for ChannelWriter {
    fn poll_write(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let sent = self
            .sender
            .as_ref()
            .map(|s| s.send(Bytes::copy_from_slice(buf)));
        Poll::Ready(match sent {
            Some(Ok(())) => Ok(buf.len()),
            _ => Err(io::ErrorKind::BrokenPipe.into()),
        })
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.sender = None;
        Poll::Ready(Ok(()))
    }
}

impl Body for ChannelBody {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        self.receiver
            .poll_recv(cx)
            .map(|bytes| bytes.map(|b| Ok(Frame::data(b))))
    }
}
