//! `AutoPlaced`: a handler that runs each call where the message finishes sooner — in the
//! serving process or on a worker — by the time both sides have been measured to take.

use crate::remote_handler::RemoteHandler;
use lather_pipeline::{
    Access, Cost, Handler, HandlerFuture, Message, Observation, Verdict, Work, run_cpu_bound,
};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// One call in `EXPLORE_EVERY` (the 32nd, 64th, …) goes to the side the estimates do not
/// favour, so both estimates follow changes of load; the other 31 go where the message is
/// expected to finish sooner.
pub const EXPLORE_EVERY: u64 = 32;

/// Where one call runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// In the serving process (on the CPU pool for CPU-bound handlers).
    Local,
    /// On a worker, through NATS.
    Remote,
}

impl Side {
    fn other(self) -> Side {
        match self {
            Side::Local => Side::Remote,
            Side::Remote => Side::Local,
        }
    }
}

/// The side call number `call` (counting from 0) goes to, given the estimates of a local
/// and a remote call (`None`: not measured yet). A side without an estimate is tried
/// (local first); then the lower estimate wins, except that every [`EXPLORE_EVERY`]th
/// call goes to the other side.
pub fn choose(
    local: Option<std::time::Duration>,
    remote: Option<std::time::Duration>,
    call: u64,
) -> Side {
    let (Some(local), Some(remote)) = (local, remote) else {
        return if local.is_none() {
            Side::Local
        } else {
            Side::Remote
        };
    };
    let sooner = if remote < local {
        Side::Remote
    } else {
        Side::Local
    };
    if call % EXPLORE_EVERY == EXPLORE_EVERY - 1 {
        sooner.other()
    } else {
        sooner
    }
}

/// What an auto-placed handler counted since start (shown on `/metrics`).
#[derive(Debug, Default)]
pub struct AutoCounters {
    /// Calls run in the serving process, including those sent there because NATS or the
    /// workers were unavailable.
    pub local_calls: AtomicU64,
    /// Calls a worker answered.
    pub remote_calls: AtomicU64,
}

/// Stands for the handler `name` in a plan with `placement = "auto"`: each call runs locally
/// or on a worker (through the wrapped [`RemoteHandler`]), whichever the estimates say the
/// message finishes sooner on (see [`choose`]).
///
/// The local estimate is the call as the message sees it: for a CPU-bound handler that
/// includes waiting for a thread of the CPU pool, so a busy server looks slower. The remote
/// one is the whole remote call, W = Tcomp + Tt + C. Both are moving averages
/// ([`lather_pipeline::Cost`]); a call the engine drops at its timeout counts with
/// the time it had taken. NATS not connected or no worker listening: the call runs locally
/// (not a remote sample), and the next [`EXPLORE_EVERY`] calls stay local before a worker
/// is tried again.
pub struct AutoPlaced {
    local: Arc<dyn Handler>,
    work: Work,
    remote: RemoteHandler,
    local_time: Cost,
    remote_time: Cost,
    decisions: AtomicU64,
    /// The decision number before which the remote side is not tried (after it was found
    /// unavailable).
    remote_paused_until: AtomicU64,
    counters: AutoCounters,
}

impl std::fmt::Debug for AutoPlaced {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AutoPlaced")
            .field("remote", &self.remote)
            .field("work", &self.work)
            .field("local_time", &self.local_time.average())
            .field("remote_time", &self.remote_time.average())
            .finish_non_exhaustive()
    }
}

impl AutoPlaced {
    /// Places calls of `local` (whose kind of work is `work`) here or through `remote`,
    /// the same handler's remote stand-in.
    pub fn new(local: Arc<dyn Handler>, work: Work, remote: RemoteHandler) -> Self {
        AutoPlaced {
            local,
            work,
            remote,
            local_time: Cost::default(),
            remote_time: Cost::default(),
            decisions: AtomicU64::new(0),
            remote_paused_until: AtomicU64::new(0),
            counters: AutoCounters::default(),
        }
    }

    /// The counters.
    pub fn counters(&self) -> &AutoCounters {
        &self.counters
    }

    /// The current estimates of a local and a remote call (`None`: not measured yet).
    pub fn estimates(&self) -> (Option<std::time::Duration>, Option<std::time::Duration>) {
        (self.local_time.average(), self.remote_time.average())
    }

    /// The wrapped remote stand-in (its counters are the remote calls' figures).
    pub fn remote(&self) -> &RemoteHandler {
        &self.remote
    }

    async fn place(&self, message: &Message) -> Verdict {
        let call = self.decisions.fetch_add(1, Ordering::Relaxed);
        let mut side = choose(self.local_time.average(), self.remote_time.average(), call);
        if side == Side::Remote && call < self.remote_paused_until.load(Ordering::Relaxed) {
            side = Side::Local;
        }
        if side == Side::Remote {
            let mut sample = Sample::start(&self.remote_time);
            match self.remote.try_call_split(message).await {
                Ok((verdict, _split)) => {
                    sample.finish();
                    self.counters.remote_calls.fetch_add(1, Ordering::Relaxed);
                    return verdict;
                }
                Err(why) => {
                    sample.discard();
                    self.remote_paused_until
                        .store(call + EXPLORE_EVERY, Ordering::Relaxed);
                    self.remote
                        .counters()
                        .fallbacks
                        .fetch_add(1, Ordering::Relaxed);
                    tracing::debug!(%why, "auto-placed handler runs locally");
                }
            }
        }
        self.counters.local_calls.fetch_add(1, Ordering::Relaxed);
        let mut sample = Sample::start(&self.local_time);
        let verdict = match self.work {
            Work::Io => self.local.call(message).await,
            Work::Cpu => {
                let local = self.local.clone();
                let message = message.clone();
                run_cpu_bound(self.local_time.average(), async move {
                    local.call(&message).await
                })
                .await
            }
        };
        sample.finish();
        verdict
    }
}

/// Times one call into an estimate: when finished, or when dropped unfinished (the engine's
/// timeout, a panic), with the time taken so far; not at all when discarded.
struct Sample<'a> {
    estimate: &'a Cost,
    started: Instant,
    pending: bool,
}

impl<'a> Sample<'a> {
    fn start(estimate: &'a Cost) -> Self {
        Sample {
            estimate,
            started: Instant::now(),
            pending: true,
        }
    }

    fn finish(&mut self) {
        if self.pending {
            self.pending = false;
            self.estimate.record(self.started.elapsed());
        }
    }

    fn discard(&mut self) {
        self.pending = false;
    }
}

impl Drop for Sample<'_> {
    fn drop(&mut self) {
        self.finish();
    }
}

impl Handler for AutoPlaced {
    fn access(&self) -> Access {
        self.local.access()
    }

    fn call<'a>(&'a self, message: &'a Message) -> HandlerFuture<'a> {
        Box::pin(self.place(message))
    }

    fn observations(&self) -> Vec<Observation> {
        let mut out = self.remote.observations();
        let counter = |name, help, value: &AtomicU64| {
            Observation::counter(name, help, value.load(Ordering::Relaxed))
        };
        let gauge = Observation::gauge;
        out.extend([
            counter(
                "auto_local_calls",
                "Calls an auto-placed handler ran in the serving process",
                &self.counters.local_calls,
            ),
            counter(
                "auto_remote_calls",
                "Calls an auto-placed handler ran on a worker",
                &self.counters.remote_calls,
            ),
            gauge(
                "auto_local_estimate_micros",
                "An auto-placed handler's estimate of a local call, microseconds (0: not measured)",
                self.local_time.micros(),
            ),
            gauge(
                "auto_remote_estimate_micros",
                "An auto-placed handler's estimate of a remote call, microseconds (0: not measured)",
                self.remote_time.micros(),
            ),
        ]);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn an_unmeasured_side_is_tried_local_first() {
        assert_eq!(choose(None, None, 0), Side::Local);
        assert_eq!(choose(None, Some(MS), 5), Side::Local);
        assert_eq!(choose(Some(MS), None, 5), Side::Remote);
        // Exploration does not apply until both are measured.
        assert_eq!(choose(Some(MS), None, EXPLORE_EVERY - 1), Side::Remote);
    }

    #[test]
    fn the_lower_estimate_wins_except_one_call_in_explore_every() {
        let cheap_here = (Some(MS / 100), Some(MS));
        let cheap_there = (Some(40 * MS), Some(MS));
        let count = |(l, r): (Option<Duration>, Option<Duration>), side| {
            (0..EXPLORE_EVERY * 4)
                .filter(|&n| choose(l, r, n) == side)
                .count()
        };
        assert_eq!(count(cheap_here, Side::Local), 4 * 31);
        assert_eq!(count(cheap_there, Side::Remote), 4 * 31);
        assert_eq!(choose(cheap_there.0, cheap_there.1, 31), Side::Local);
        assert_eq!(choose(cheap_there.0, cheap_there.1, 63), Side::Local);
        assert_eq!(choose(cheap_there.0, cheap_there.1, 62), Side::Remote);
        // A tie stays local: nothing to gain from the network.
        assert_eq!(choose(Some(MS), Some(MS), 0), Side::Local);
    }

    /// Counts its calls and the threads they ran on.
    struct Probe {
        calls: AtomicU64,
        on_pool: AtomicU64,
    }

    impl Handler for Probe {
        fn access(&self) -> Access {
            Access::default()
        }

        fn call<'a>(&'a self, _message: &'a Message) -> HandlerFuture<'a> {
            Box::pin(async move {
                self.calls.fetch_add(1, Ordering::Relaxed);
                if std::thread::current().name() == Some("lather-cpu") {
                    self.on_pool.fetch_add(1, Ordering::Relaxed);
                }
                std::thread::sleep(Duration::from_millis(1));
                Verdict::proceed()
            })
        }
    }

    fn message() -> Message {
        let text = r#"<s:Envelope xmlns:s="http://schemas.xmlsoap.org/soap/envelope/"><s:Body><x/></s:Body></s:Envelope>"#;
        let envelope = lather_envelope::Envelope::parse(
            bytes::Bytes::from_static(text.as_bytes()),
            &lather_envelope::Limits::default(),
        )
        .unwrap();
        Message::new(envelope, lather_pipeline::Context::default())
    }

    #[tokio::test]
    async fn without_nats_every_call_runs_locally_and_is_not_a_remote_sample() {
        let config =
            lather_config::Config::from_toml("[nats]\nurl = \"nats://127.0.0.1:1\"\n", "t.toml")
                .unwrap();
        // Never connected: unavailable.
        let link = Arc::new(crate::Link::new(config.nats.as_ref().unwrap()));
        let probe = Arc::new(Probe {
            calls: AtomicU64::new(0),
            on_pool: AtomicU64::new(0),
        });
        let remote = RemoteHandler::new(
            "p",
            probe.clone(),
            link,
            lather_config::Fallback::Fault,
            Duration::from_secs(5),
            lather_envelope::Limits::default(),
        );
        let auto = AutoPlaced::new(probe.clone(), Work::Cpu, remote);
        let message = message();
        for _ in 0..3 * EXPLORE_EVERY {
            assert!(matches!(auto.call(&message).await, Verdict::Continue(_)));
        }
        assert_eq!(probe.calls.load(Ordering::Relaxed), 3 * EXPLORE_EVERY);
        assert_eq!(
            probe.on_pool.load(Ordering::Relaxed),
            3 * EXPLORE_EVERY,
            "a CPU-bound call of 1 ms runs on the CPU pool"
        );
        assert_eq!(auto.counters().local_calls.load(Ordering::Relaxed), 96);
        assert_eq!(auto.counters().remote_calls.load(Ordering::Relaxed), 0);
        let (local, remote) = auto.estimates();
        assert!(
            local.is_some_and(|l| l >= Duration::from_millis(1)),
            "{local:?}"
        );
        assert_eq!(remote, None, "an unavailable worker is not a sample");
        // Tried remote once (call 1), then paused for EXPLORE_EVERY calls, and so on.
        let tried = auto.remote().counters().fallbacks.load(Ordering::Relaxed);
        assert_eq!(tried, 3, "{tried}");
        let figures = auto.observations();
        let value = |name: &str| figures.iter().find(|o| o.name == name).unwrap().value;
        assert_eq!(value("auto_local_calls"), 96);
        assert_eq!(value("auto_remote_calls"), 0);
        assert!(value("auto_local_estimate_micros") >= 1000);
        assert_eq!(value("auto_remote_estimate_micros"), 0);
        assert_eq!(value("remote_fallbacks"), 3);
    }
}
