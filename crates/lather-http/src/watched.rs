//! A connection that reports the bytes it moves, read and written, to an observer: the
//! idle watch of an HTTP connection, the byte counters of message streams.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// What a [`Watched`] connection reports to.
pub(crate) trait Traffic: Send + Sync {
    /// `bytes` were read (at least 1).
    fn read(&self, bytes: &[u8]);
    /// `n` bytes were written (at least 1).
    fn written(&self, n: usize);
}

/// `inner`, reporting to `traffic`.
#[derive(Debug)]
pub(crate) struct Watched<S, T> {
    inner: S,
    traffic: Arc<T>,
}

impl<S, T> Watched<S, T> {
    pub(crate) fn new(inner: S, traffic: Arc<T>) -> Self {
        Watched { inner, traffic }
    }
}

impl<S: AsyncRead + Unpin, T: Traffic> AsyncRead for Watched<S, T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let this = &mut *self;
        let poll = Pin::new(&mut this.inner).poll_read(cx, buf);
        let read = &buf.filled()[before..];
        if !read.is_empty() {
            this.traffic.read(read);
        }
        poll
    }
}

impl<S: AsyncWrite + Unpin, T: Traffic> AsyncWrite for Watched<S, T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        let poll = Pin::new(&mut this.inner).poll_write(cx, buf);
        if let Poll::Ready(Ok(n)) = poll
            && n > 0
        {
            this.traffic.written(n);
        }
        poll
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        let poll = Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        if let Poll::Ready(Ok(n)) = poll
            && n > 0
        {
            this.traffic.written(n);
        }
        poll
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
