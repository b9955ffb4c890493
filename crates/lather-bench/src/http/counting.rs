//! A `TcpStream` wrapper that counts the bytes read and written.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

/// Byte counters of one connection, shared between the connection driver
/// task (which does the I/O) and the virtual client (which reads them).
#[derive(Debug, Default)]
pub(crate) struct IoCounters {
    sent: AtomicU64,
    received: AtomicU64,
}

impl IoCounters {
    /// `(sent, received)` so far.
    pub(crate) fn snapshot(&self) -> (u64, u64) {
        (
            self.sent.load(Ordering::Relaxed),
            self.received.load(Ordering::Relaxed),
        )
    }
}

/// A `TcpStream` that adds every transferred byte to its [`IoCounters`].
#[derive(Debug)]
pub(crate) struct CountingStream {
    inner: TcpStream,
    counters: Arc<IoCounters>,
}

impl CountingStream {
    pub(crate) fn new(inner: TcpStream, counters: Arc<IoCounters>) -> Self {
        Self { inner, counters }
    }

    fn add_sent(&self, n: usize) {
        self.counters.sent.fetch_add(n as u64, Ordering::Relaxed);
    }
}

impl AsyncRead for CountingStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let res = Pin::new(&mut this.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = res {
            let n = buf.filled().len().saturating_sub(before);
            this.counters
                .received
                .fetch_add(n as u64, Ordering::Relaxed);
        }
        res
    }
}

impl AsyncWrite for CountingStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let res = Pin::new(&mut this.inner).poll_write(cx, buf);
        if let Poll::Ready(Ok(n)) = res {
            this.add_sent(n);
        }
        res
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let res = Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        if let Poll::Ready(Ok(n)) = res {
            this.add_sent(n);
        }
        res
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}
