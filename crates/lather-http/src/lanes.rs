//! The I/O threads connections are handed to (their lanes), and what a connection holds
//! while it is open: its place under the caps, in the open-connections gauge and in its
//! lane's count.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use tokio::sync::mpsc;

/// What a connection holds while it is open.
pub(crate) struct Held {
    pub(crate) _slot: crate::conn_cap::Slot,
    pub(crate) _open: crate::metrics::InFlight,
    /// Its place in the count of the thread serving it (replaced when it moves).
    pub(crate) lane: LaneCount,
}

/// One open connection counted on its thread until dropped.
pub(crate) struct LaneCount(Arc<AtomicUsize>);

impl LaneCount {
    /// Counts one more connection in `open`.
    pub(crate) fn new(open: &Arc<AtomicUsize>) -> Self {
        open.fetch_add(1, Ordering::Relaxed);
        LaneCount(open.clone())
    }
}

impl Drop for LaneCount {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// What an I/O thread is handed.
pub(crate) enum Handed {
    /// A connection accepted on the accepting thread, to serve from the start.
    Accepted {
        stream: std::net::TcpStream,
        peer: SocketAddr,
        held: Held,
    },
    /// A connection served elsewhere until now, moved whole between two requests.
    Moved(MovedTask),
}

/// The task of a connection moved to another thread.
pub(crate) type MovedTask = Pin<Box<dyn Future<Output = ()> + Send>>;

/// An I/O thread connections can be handed to: its queue and how many it serves.
#[derive(Debug)]
pub(crate) struct Lane {
    queue: mpsc::UnboundedSender<Handed>,
    open: Arc<AtomicUsize>,
    /// Connections moved off the lane since the CPU sample `left_in` was taken.
    left: AtomicUsize,
    left_in: AtomicU64,
}

impl Lane {
    /// A lane and the receiving end its thread serves.
    pub(crate) fn new() -> (Lane, mpsc::UnboundedReceiver<Handed>) {
        let (queue, handed) = mpsc::unbounded_channel();
        let lane = Lane {
            queue,
            open: Arc::default(),
            left: AtomicUsize::new(0),
            left_in: AtomicU64::new(0),
        };
        (lane, handed)
    }

    /// Hands `handed` to the thread; gives it back when the thread no longer takes any.
    pub(crate) fn hand(&self, handed: Handed) -> Result<(), Handed> {
        self.queue
            .send(handed)
            .map_err(|mpsc::error::SendError(back)| back)
    }

    /// Hands a moved connection's task to the thread: `true` when it took it. A thread
    /// that takes no more (it is stopping) leaves the task to be served on here, in a task
    /// of the current runtime.
    pub(crate) fn hand_moved(&self, task: MovedTask) -> bool {
        match self.hand(Handed::Moved(task)) {
            Ok(()) => true,
            Err(back) => {
                if let Handed::Moved(task) = back {
                    drop(tokio::spawn(task));
                }
                false
            }
        }
    }

    /// A place in this lane's count.
    pub(crate) fn count(&self) -> LaneCount {
        LaneCount::new(&self.open)
    }

    /// How many connections the lane serves now.
    pub(crate) fn open(&self) -> usize {
        self.open.load(Ordering::Relaxed)
    }
}

/// Every lane of a server, in order (lane `i` is I/O thread `i + 1`).
#[derive(Debug)]
pub(crate) struct Lanes {
    lanes: Vec<Lane>,
}

impl Lanes {
    /// The lanes, in order.
    pub(crate) fn new(lanes: Vec<Lane>) -> Self {
        Lanes { lanes }
    }

    /// Lane `i`, if there is one.
    pub(crate) fn get(&self, i: usize) -> Option<&Lane> {
        self.lanes.get(i)
    }

    /// How many connections each lane serves now.
    pub(crate) fn open(&self) -> Vec<usize> {
        self.lanes.iter().map(Lane::open).collect()
    }

    /// Whether one more connection may be shed off lane `from` on CPU sample `sample` (and
    /// counts it if so): at most an eighth of its connections (two at least) per sample, so
    /// the connections of a lane whose CPU has no spare time leave a few at a time, each
    /// sample showing what the last moves did, rather than all at once on one sample's word.
    pub(crate) fn may_leave(&self, from: usize, sample: u64) -> bool {
        let Some(lane) = self.lanes.get(from) else {
            return false;
        };
        if lane.left_in.swap(sample, Ordering::Relaxed) != sample {
            lane.left.store(0, Ordering::Relaxed);
        }
        let budget = (lane.open() / 8).max(2);
        lane.left.fetch_add(1, Ordering::Relaxed) < budget
    }

    /// The lane serving the I/O thread running this code, if it is one.
    pub(crate) fn current() -> Option<usize> {
        crate::io_thread::current().checked_sub(1)
    }
}
