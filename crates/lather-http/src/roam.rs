//! A connection that follows its client. With the I/O threads pinned one per CPU
//! (`[server] pin_io_threads`), a plain HTTP/1.1 connection is served by the thread of the
//! CPU its packets arrive on, which on loopback is the CPU its client's thread runs on: the
//! client and the thread answering it then wake each other without an interrupt to another
//! CPU. Client threads move between CPUs; so, between two requests, does the connection:
//! every [`SAMPLE_EVERY`](crate::homed::SAMPLE_EVERY) reads its stream notes the CPU
//! (`crate::homed`), and the whole connection — hyper's state, buffers and all — is handed
//! to that CPU's thread when [`roam_to`](crate::placement::roam_to) allows (that CPU has
//! spare time, or none has and the lanes stay balanced), or off a saturated CPU. Its
//! stream registers with the new thread's event loop on first use; its idle watch is made
//! again there.

use crate::homed::SeenCpu;
use crate::idle::{Activity, Stall};
use crate::lanes::{Held, Lane, Lanes};
use crate::metrics::ConnectionMetrics;
use crate::placement::Move;
use crate::when_woken::WhenWoken;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

/// How long a connection moved off a saturated CPU stays away from it.
const SHED_FOR: Duration = Duration::from_secs(1);

/// Every lane a connection may roam to and the CPU each runs on.
#[derive(Debug, Clone)]
pub(crate) struct LaneMap {
    pub(crate) lanes: Arc<Lanes>,
    /// The CPU of each lane, in lane order.
    pub(crate) cpus: Arc<[usize]>,
    /// The idle shares a move is decided by.
    pub(crate) thresholds: crate::placement::Thresholds,
}

/// Where a roaming connection may go, and the CPU its stream last noted.
pub(crate) struct Roam {
    pub(crate) map: LaneMap,
    pub(crate) seen: Arc<SeenCpu>,
}

/// How a connection is watched for idleness and slow request heads.
pub(crate) struct Watch {
    pub(crate) activity: Arc<Activity>,
    pub(crate) idle: Duration,
    pub(crate) head: Duration,
    pub(crate) peer: SocketAddr,
    pub(crate) metrics: ConnectionMetrics,
}

impl Watch {
    /// The watch's future, made on the thread that serves the connection (its timer is that
    /// thread's).
    fn start(&self) -> Pin<Box<dyn Future<Output = Stall> + Send>> {
        let activity = self.activity.clone();
        let (idle, head) = (self.idle, self.head);
        Box::pin(WhenWoken::new(
            async move { activity.stalled(idle, head).await },
        ))
    }
}

/// One connection's task: serves it until it ends or stalls, and moves it to another I/O
/// thread when its client has (see the module's description).
pub(crate) struct Roaming {
    /// `None` once handed to another thread.
    state: Option<Connection>,
}

/// A connection's parts, moved together.
struct Connection {
    serve: Pin<Box<dyn Future<Output = ()> + Send>>,
    watch: Watch,
    /// The watch's future on this thread, made at the first poll here.
    stalled: Option<Pin<Box<dyn Future<Output = Stall> + Send>>>,
    held: Held,
    /// The lane whose count `held` is in.
    counted_on: usize,
    /// `None`: the connection stays on its thread.
    roam: Option<Roam>,
    /// When the connection was last moved off a saturated CPU.
    shed_at: Option<Instant>,
}

impl Connection {
    /// Counts the connection on the lane serving it now, if it moved here (asked once on
    /// each thread, at its first poll there).
    fn count_here(&mut self) {
        let Some(roam) = &self.roam else { return };
        let Some(here) = Lanes::current() else { return };
        if here != self.counted_on
            && let Some(lane) = roam.map.lanes.get(here)
        {
            self.held.lane = lane.count();
            self.counted_on = here;
        }
    }
}

impl Roaming {
    /// The task serving a connection with `serve`, watched by `watch`, holding `held`;
    /// with `roam`, free to move between the lanes.
    pub(crate) fn new(
        serve: Pin<Box<dyn Future<Output = ()> + Send>>,
        watch: Watch,
        held: Held,
        roam: Option<Roam>,
    ) -> Self {
        Roaming {
            state: Some(Connection {
                serve,
                watch,
                stalled: None,
                held,
                counted_on: Lanes::current().unwrap_or(usize::MAX),
                roam,
                shed_at: None,
            }),
        }
    }

    /// Hands the connection to `lane`'s thread (served on here, in a task of its own,
    /// when that thread takes no more).
    fn hand_to(&mut self, lane: &Lane) {
        let Some(mut connection) = self.state.take() else {
            return;
        };
        // Its timer belongs to this thread's runtime: made again there.
        connection.stalled = None;
        let metrics = connection.watch.metrics.clone();
        let task = Box::pin(Roaming {
            state: Some(connection),
        });
        if lane.hand_moved(task) {
            metrics.moved();
        }
    }
}

impl Future for Roaming {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let Some(connection) = self.state.as_mut() else {
            return Poll::Ready(());
        };
        // The first poll on this thread (the watch is made again after every move): counted
        // on its lane from now on.
        if connection.stalled.is_none() {
            connection.count_here();
        }
        if connection.serve.as_mut().poll(cx).is_ready() {
            return Poll::Ready(());
        }
        let stalled = connection
            .stalled
            .get_or_insert_with(|| connection.watch.start());
        if let Poll::Ready(stall) = stalled.as_mut().poll(cx) {
            let peer = connection.watch.peer;
            match stall {
                Stall::Idle => {
                    connection.watch.metrics.idle_closed();
                    tracing::debug!(%peer, "idle connection closed");
                }
                Stall::SlowHead => {
                    tracing::debug!(%peer, "request head not complete within header_timeout_ms: connection closed");
                }
            }
            return Poll::Ready(());
        }
        let Some(roam) = &connection.roam else {
            return Poll::Pending;
        };
        // Only between two requests, on a plain HTTP/1.1 connection.
        if connection.watch.activity.handling() || !connection.watch.activity.times_heads() {
            return Poll::Pending;
        }
        let (Some(cpu), Some(from)) = (roam.seen.take(), Lanes::current()) else {
            return Poll::Pending;
        };
        let map = &roam.map;
        let idle = crate::cpu_idle::idle_permille(&map.cpus);
        let moved = match crate::placement::roam_to(
            &map.cpus,
            from,
            cpu,
            &map.lanes.open(),
            &idle.permille,
            map.thresholds,
        ) {
            // Not back to where it was shed from before that CPU had time to recover.
            Some(Move::Follow(_))
                if connection.shed_at.is_some_and(|at| at.elapsed() < SHED_FOR) =>
            {
                None
            }
            Some(Move::Follow(to)) => Some(to),
            // A few at a time: each sample shows what the last moves did.
            Some(Move::Shed(to)) if map.lanes.may_leave(from, idle.sample) => {
                connection.shed_at = Some(Instant::now());
                Some(to)
            }
            Some(Move::Shed(_)) | None => None,
        };
        let Some(to) = moved else {
            return Poll::Pending;
        };
        // The lanes outlive the connection handed over with them.
        let lanes = map.lanes.clone();
        match lanes.get(to) {
            Some(lane) => {
                self.hand_to(lane);
                Poll::Ready(())
            }
            None => Poll::Pending,
        }
    }
}
