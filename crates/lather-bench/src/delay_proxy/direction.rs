//! One direction of a proxied connection: a reader thread stamps each chunk with the time
//! it was read and queues it; a writer thread sends each chunk once it would have crossed
//! the link — after its turn on a link of the given rate, if any, and the delay — in the
//! order read, and notes how late it was.

use super::precise_sleep;
use hdrhistogram::Histogram;
use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Bytes read at once.
const CHUNK_BYTES: usize = 64 * 1024;
/// Chunks held at most per direction (so at most 64 MiB): a full queue stops the reading,
/// and TCP's flow control slows the sender.
const QUEUE_CHUNKS: usize = 1024;

/// The link a direction stands for.
#[derive(Debug, Clone, Copy)]
pub(super) struct Link {
    /// Propagation delay.
    pub(super) delay: Duration,
    /// The busy-waited end of each wait.
    pub(super) spin: Duration,
    /// Bits per second the link carries (`None`: unlimited).
    pub(super) rate_bps: Option<u64>,
}

impl Link {
    /// How long `bytes` take to be put on the link.
    fn transmission(&self, bytes: usize) -> Duration {
        match self.rate_bps {
            Some(bps) if bps > 0 => {
                Duration::from_nanos((bytes as u64 * 8).saturating_mul(1_000_000_000) / bps)
            }
            _ => Duration::ZERO,
        }
    }
}

/// What one direction forwarded, and how late its chunks left.
#[derive(Debug)]
pub(super) struct DirectionSummary {
    pub(super) chunks: u64,
    pub(super) bytes: u64,
    /// Microseconds between a chunk's due time and its write.
    pub(super) lateness_us: Histogram<u64>,
}

/// Forwards what arrives on `from` to `to`, each chunk when it would have crossed `link`;
/// at the end of `from` the writing side of `to` is shut down. The handle yields the
/// summary once both threads are done.
pub(super) fn forward(
    from: TcpStream,
    to: TcpStream,
    link: Link,
) -> std::io::Result<JoinHandle<DirectionSummary>> {
    let (queue, held) = sync_channel(QUEUE_CHUNKS);
    let stop_reading = from.try_clone()?;
    let reader = std::thread::Builder::new()
        .name("delay-read".into())
        .spawn(move || read_side(from, queue))?;
    std::thread::Builder::new()
        .name("delay-write".into())
        .spawn(move || {
            let summary = write_side(held, to, link, &stop_reading);
            let _ = reader.join();
            summary
        })
}

fn read_side(mut from: TcpStream, queue: SyncSender<(Instant, Vec<u8>)>) {
    let mut buf = vec![0u8; CHUNK_BYTES];
    loop {
        match from.read(&mut buf) {
            Ok(0) => return,
            Ok(n) => {
                if queue.send((Instant::now(), buf[..n].to_vec())).is_err() {
                    return;
                }
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => return,
        }
    }
}

fn write_side(
    held: Receiver<(Instant, Vec<u8>)>,
    mut to: TcpStream,
    link: Link,
    from: &TcpStream,
) -> DirectionSummary {
    let mut summary = DirectionSummary {
        chunks: 0,
        bytes: 0,
        lateness_us: crate::http::stats::new_histogram(),
    };
    // When the link has finished sending the chunks before.
    let mut link_free = Instant::now();
    for (read_at, chunk) in held {
        let sent = read_at.max(link_free) + link.transmission(chunk.len());
        link_free = sent;
        let due = sent + link.delay;
        precise_sleep::until(due, link.spin);
        let late = Instant::now().saturating_duration_since(due);
        if to.write_all(&chunk).is_err() {
            // The far end is gone: stop reading the near end too, so its reader ends.
            let _ = from.shutdown(Shutdown::Read);
            let _ = to.shutdown(Shutdown::Both);
            return summary;
        }
        summary.chunks += 1;
        summary.bytes += chunk.len() as u64;
        summary
            .lateness_us
            .saturating_record(u64::try_from(late.as_micros()).unwrap_or(u64::MAX));
    }
    let _ = to.shutdown(Shutdown::Write);
    summary
}
