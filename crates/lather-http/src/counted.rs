//! A connection that counts the bytes it reads and writes, for the stream metrics.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// Bytes read and written, summed over connections.
#[derive(Debug, Default)]
pub(crate) struct ByteCounts {
    pub(crate) read: AtomicU64,
    pub(crate) written: AtomicU64,
}

/// `io`, counting into `counts`.
pub(crate) struct Counted<T> {
    io: T,
    counts: Arc<ByteCounts>,
}

impl<T> Counted<T> {
    pub(crate) fn new(io: T, counts: Arc<ByteCounts>) -> Self {
        Counted { io, counts }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for Counted<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.io).poll_read(cx, buf);
        let n = buf.filled().len() - before;
        self.counts.read.fetch_add(n as u64, Ordering::Relaxed);
        polled
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Counted<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.io).poll_write(cx, buf);
        if let Poll::Ready(Ok(n)) = &polled {
            self.counts.written.fetch_add(*n as u64, Ordering::Relaxed);
        }
        polled
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}
