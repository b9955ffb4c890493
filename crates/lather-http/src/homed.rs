//! A TCP stream served by whichever I/O thread polls it: when a roaming connection
//! ([`crate::roam`]) has moved to another thread, the stream's first use there moves its
//! registration to that thread's event loop, so its readiness wakes the thread that serves
//! it. A roaming stream also notes, every [`SAMPLE_EVERY`] reads, the CPU its packets
//! arrive on (`SO_INCOMING_CPU`).

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

/// How many reads with data pass between two looks at the CPU packets arrive on.
pub(crate) const SAMPLE_EVERY: u32 = 16;

/// A TCP stream registered with the event loop of the I/O thread serving it.
#[derive(Debug)]
pub(crate) struct Homed {
    /// `None` only after a move to another thread failed (every later use fails too).
    stream: Option<TcpStream>,
    /// The I/O thread ([`crate::io_thread`]) whose event loop the stream is registered with.
    thread: usize,
    /// Reads with data since the last look at the CPU.
    reads: u32,
    /// Where the CPU is noted; `None`: the connection does not roam, and never moves.
    seen: Option<Arc<SeenCpu>>,
}

impl Homed {
    /// `stream`, registered with the current thread's event loop; `seen` gets the CPU its
    /// packets arrive on when the connection roams.
    pub(crate) fn new(stream: TcpStream, seen: Option<Arc<SeenCpu>>) -> Self {
        Homed {
            stream: Some(stream),
            thread: crate::io_thread::current(),
            reads: 0,
            seen,
        }
    }

    /// The stream, when it is usable.
    pub(crate) fn tcp(&self) -> Option<&TcpStream> {
        self.stream.as_ref()
    }

    /// The stream, registered with this thread's event loop first if its connection moved
    /// here.
    fn here(&mut self) -> io::Result<&mut TcpStream> {
        if self.seen.is_some() {
            let thread = crate::io_thread::current();
            if thread != self.thread {
                let moved = self.stream.take().ok_or_else(gone)?.into_std()?;
                self.stream = Some(TcpStream::from_std(moved)?);
                self.thread = thread;
            }
        }
        self.stream.as_mut().ok_or_else(gone)
    }

    /// Counts a read with data; every [`SAMPLE_EVERY`]th notes the CPU of its packets.
    fn count_read(&mut self) {
        let Some(seen) = &self.seen else { return };
        self.reads += 1;
        if self.reads < SAMPLE_EVERY {
            return;
        }
        self.reads = 0;
        if let Some(cpu) = self
            .stream
            .as_ref()
            .and_then(crate::placement::incoming_cpu)
        {
            seen.note(cpu);
        }
    }
}

/// The CPU a connection's packets were last seen arriving on.
#[derive(Debug)]
pub(crate) struct SeenCpu(AtomicUsize);

/// No CPU seen since the last look.
const UNSEEN: usize = usize::MAX;

impl SeenCpu {
    /// Nothing seen yet.
    pub(crate) fn new() -> Self {
        SeenCpu(AtomicUsize::new(UNSEEN))
    }

    /// Notes `cpu`.
    pub(crate) fn note(&self, cpu: usize) {
        self.0.store(cpu, Ordering::Relaxed);
    }

    /// The CPU noted since the last call, if any. Asked at every poll of its connection:
    /// a plain read while nothing was noted, the swap only when something was.
    pub(crate) fn take(&self) -> Option<usize> {
        if self.0.load(Ordering::Relaxed) == UNSEEN {
            return None;
        }
        match self.0.swap(UNSEEN, Ordering::Relaxed) {
            UNSEEN => None,
            cpu => Some(cpu),
        }
    }
}

/// The error of a stream lost in a failed move.
fn gone() -> io::Error {
    io::Error::new(
        io::ErrorKind::NotConnected,
        "the connection could not be moved to another I/O thread",
    )
}

impl AsyncRead for Homed {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let poll = match self.here() {
            Ok(stream) => Pin::new(stream).poll_read(cx, buf),
            Err(e) => return Poll::Ready(Err(e)),
        };
        if buf.filled().len() > before {
            self.count_read();
        }
        poll
    }
}

impl AsyncWrite for Homed {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.here() {
            Ok(stream) => Pin::new(stream).poll_write(cx, buf),
            Err(e) => Poll::Ready(Err(e)),
        }
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match self.here() {
            Ok(stream) => Pin::new(stream).poll_write_vectored(cx, bufs),
            Err(e) => Poll::Ready(Err(e)),
        }
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.here() {
            Ok(stream) => Pin::new(stream).poll_flush(cx),
            Err(e) => Poll::Ready(Err(e)),
        }
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.here() {
            Ok(stream) => Pin::new(stream).poll_shutdown(cx),
            Err(e) => Poll::Ready(Err(e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    #[test]
    fn a_stream_moved_to_another_thread_is_served_there_after_its_first_thread_ended() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let seen = Arc::new(SeenCpu::new());
        let noted = seen.clone();
        // Accepted and registered on I/O thread 1, whose runtime then ends.
        let homed = std::thread::spawn(move || {
            crate::io_thread::set(1);
            let (stream, _) = listener.accept().unwrap();
            stream.set_nonblocking(true).unwrap();
            let runtime = runtime();
            let _entered = runtime.enter();
            Homed::new(TcpStream::from_std(stream).unwrap(), Some(noted))
        });
        let mut client = std::net::TcpStream::connect(addr).unwrap();
        let mut homed = homed.join().unwrap();
        // Served on I/O thread 2: every read answered.
        let served = std::thread::spawn(move || {
            crate::io_thread::set(2);
            runtime().block_on(async move {
                let mut buf = [0u8; 4];
                for _ in 0..SAMPLE_EVERY {
                    homed.read_exact(&mut buf).await.unwrap();
                    homed.write_all(&buf).await.unwrap();
                }
            });
        });
        for i in 0..SAMPLE_EVERY {
            use std::io::{Read, Write};
            let sent = i.to_be_bytes();
            client.write_all(&sent).unwrap();
            let mut got = [0u8; 4];
            client.read_exact(&mut got).unwrap();
            assert_eq!(got, sent);
        }
        served.join().unwrap();
        let cpu = seen
            .take()
            .expect("the CPU is noted every SAMPLE_EVERY reads");
        assert!(lather_pipeline::affinity::process_cpus().contains(&cpu));
    }

    #[test]
    fn a_stream_that_does_not_roam_notes_nothing() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        runtime().block_on(async move {
            let listener = tokio::net::TcpListener::from_std({
                listener.set_nonblocking(true).unwrap();
                listener
            })
            .unwrap();
            let mut client = TcpStream::connect(addr).await.unwrap();
            let (stream, _) = listener.accept().await.unwrap();
            let mut homed = Homed::new(stream, None);
            let mut buf = [0u8; 1];
            for _ in 0..2 * SAMPLE_EVERY {
                client.write_all(b"x").await.unwrap();
                homed.read_exact(&mut buf).await.unwrap();
            }
            assert_eq!(homed.reads, 0);
        });
    }
}
