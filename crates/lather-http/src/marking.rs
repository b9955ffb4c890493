//! DiffServ marking of a connection's answers (WS-QoS traffic classes): the dispatcher
//! says which code point an answer's class wants ([`Marking::want`]); the connection sets
//! `IP_TOS` (and `IPV6_TCLASS` on an IPv6 socket) before its next write when that differs
//! from what the socket carries — so a connection is re-marked only when the class of its
//! answers changes, and an answer without a class leaves it as it is.

use crate::homed::Homed;
use socket2::SockRef;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU16, Ordering};
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// No code point asked for yet.
const NONE: u16 = u16::MAX;

/// The code point a connection's next answers are to carry (in each request's `Peer`).
#[derive(Debug)]
pub(crate) struct Marking {
    wanted: AtomicU16,
}

impl Default for Marking {
    fn default() -> Self {
        Marking {
            wanted: AtomicU16::new(NONE),
        }
    }
}

impl Marking {
    /// The answers from now on carry `dscp` (0–63).
    pub(crate) fn want(&self, dscp: u8) {
        self.wanted.store(u16::from(dscp & 0x3f), Ordering::Relaxed);
    }
}

/// A TCP connection whose writes carry the code point its [`Marking`] wants.
#[derive(Debug)]
pub(crate) struct Marked {
    inner: Homed,
    marking: Arc<Marking>,
    applied: u16,
    ipv6: bool,
}

impl Marked {
    pub(crate) fn new(inner: Homed, marking: Arc<Marking>) -> Self {
        let ipv6 = inner
            .tcp()
            .and_then(|tcp| tcp.local_addr().ok())
            .is_some_and(|a| a.is_ipv6());
        Marked {
            inner,
            marking,
            applied: NONE,
            ipv6,
        }
    }

    /// Sets the socket's TOS / traffic class when the wanted code point changed.
    fn remark(&mut self) {
        let wanted = self.marking.wanted.load(Ordering::Relaxed);
        if wanted == self.applied {
            return;
        }
        self.applied = wanted;
        let tos = u32::from(wanted) << 2;
        let Some(tcp) = self.inner.tcp() else { return };
        let socket = SockRef::from(tcp);
        let set = if self.ipv6 {
            // Both: an IPv6 socket may carry IPv4-mapped traffic.
            let _ = socket.set_tos_v4(tos);
            socket.set_tclass_v6(tos)
        } else {
            socket.set_tos_v4(tos)
        };
        if let Err(e) = set {
            tracing::debug!(error = %e, "the connection could not be marked");
        }
    }
}

impl AsyncRead for Marked {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for Marked {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.remark();
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.remark();
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
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
