//! `RemoteHandler`: a handler stage that runs on a worker, reached through NATS.

use crate::frame::{Answer, Outcome, WorkerTiming};
use crate::stand_in::StandIn;
use crate::{Link, request_for};
use lather_config::Fallback;
use lather_envelope::{Envelope, Fault, FaultKind, Limits};
use lather_pipeline::{
    Access, Handler, HandlerFuture, Message, Observation, Verdict, current_attempt,
};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// How long past the handler's timeout the NATS request itself waits: the engine's timeout
/// fires first, so a lost answer is a timeout the engine retries (stateless handlers).
const REQUEST_GRACE: Duration = Duration::from_secs(1);

/// What a remote handler counted since start (shown on `/metrics`).
#[derive(Debug, Default)]
pub struct RemoteCounters {
    /// Requests sent to workers.
    pub calls: AtomicU64,
    /// Requests whose answer did not come within the handler's timeout.
    pub timeouts: AtomicU64,
    /// Calls that went to the fallback (local run or fault) because NATS or every worker
    /// was unavailable.
    pub fallbacks: AtomicU64,
    /// Answered calls' handler time on the workers, in microseconds (equation 1's Tcomp).
    pub handler_micros: AtomicU64,
    /// Answered calls' time on the way to and from the workers, in microseconds (Tt).
    pub transfer_micros: AtomicU64,
    /// Answered calls' remaining time — framing, rebuilding, parsing — in microseconds (C).
    pub overhead_micros: AtomicU64,
}

/// One answered remote call's time split as equation 1 of the distributed handler
/// architecture, W = Tcomp + Tt + C.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CallSplit {
    /// Tcomp: the handler's own time on the worker.
    pub handler: Duration,
    /// Tt: the round trip through NATS less the worker's whole time — the bytes moving
    /// from the service to the broker to the worker and back.
    pub transfer: Duration,
    /// C: everything else — encoding the request, decoding it and rebuilding the message on
    /// the worker, encoding and decoding the answer, turning it into a verdict.
    pub overhead: Duration,
}

impl CallSplit {
    /// The whole call as the service saw it.
    pub fn total(&self) -> Duration {
        self.handler + self.transfer + self.overhead
    }
}

/// Stands for the handler `name` in a plan and runs it on a `lather worker`: the request
/// frame (only the parts the handler reads) goes to `{prefix}.handler.{name}`, the answer
/// comes back as the verdict. It declares the same [`Access`] as the local handler.
///
/// NATS not connected, or no worker listening: the `fallback` runs the local instance or
/// answers `HandlerFailed` naming the subject and URL. An answer that does not come in time
/// is a timeout of the stage, which the engine retries for stateless handlers (the queue
/// group gives the retry to any worker).
pub struct RemoteHandler {
    stand: StandIn,
    timeout: Duration,
    limits: Limits,
    counters: RemoteCounters,
}

impl std::fmt::Debug for RemoteHandler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteHandler")
            .field("stand_in", &self.stand)
            .finish_non_exhaustive()
    }
}

impl RemoteHandler {
    /// The remote stand-in for `local`, configured as `name`, through `link`. `timeout` is
    /// the step's per-attempt timeout (sent as the deadline); a `Respond` envelope from a
    /// worker is parsed within `limits`.
    pub fn new(
        name: &str,
        local: Arc<dyn Handler>,
        link: Arc<Link>,
        fallback: Fallback,
        timeout: Duration,
        limits: Limits,
    ) -> Self {
        RemoteHandler {
            stand: StandIn::new(name, local, link.clone(), link.subject(name), fallback),
            timeout,
            limits,
            counters: RemoteCounters::default(),
        }
    }

    /// The counters.
    pub fn counters(&self) -> &RemoteCounters {
        &self.counters
    }

    /// Calls the handler on a worker (or the fallback) and, when a worker answered, how the
    /// call's time splits ([`CallSplit`]); the split is also added to the counters.
    pub async fn call_split(&self, message: &Message) -> (Verdict, Option<CallSplit>) {
        match self.try_call_split(message).await {
            Ok(answered) => answered,
            Err(why) => (self.fall_back(message, why).await, None),
        }
    }

    /// [`call_split`](Self::call_split) without the fallback: `Err` says why NATS or every
    /// worker was unavailable (nothing ran; the caller decides what to do and counts it).
    pub async fn try_call_split(
        &self,
        message: &Message,
    ) -> Result<(Verdict, Option<CallSplit>), String> {
        let Some(client) = self.stand.link.available() else {
            return Err("NATS is not connected".to_owned());
        };
        let started = Instant::now();
        let deadline_unix_ms = SystemTime::now()
            .checked_add(self.timeout)
            .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
            .map_or(u64::MAX, |d| {
                u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
            });
        let request = request_for(
            &self.stand.name,
            &self.stand.access,
            message,
            current_attempt(),
            deadline_unix_ms,
        );
        let frame = match request.encode() {
            Ok(frame) => frame,
            Err(e) => {
                return Ok((
                    self.failed(format!("the message cannot be framed: {e}")),
                    None,
                ));
            }
        };
        self.counters.calls.fetch_add(1, Ordering::Relaxed);
        let mut watch = TimeoutWatch {
            counters: &self.counters,
            deadline: started + self.timeout,
            finished: false,
        };
        let nats_request = async_nats::Request::new()
            .payload(frame)
            .timeout(Some(self.timeout + REQUEST_GRACE));
        let sent = Instant::now();
        let result = client
            .send_request(self.stand.subject.clone(), nats_request)
            .await;
        let round_trip = sent.elapsed();
        watch.finished = true;
        use async_nats::RequestErrorKind as Kind;
        match result {
            Ok(reply) => {
                let (verdict, timing) = self.verdict(request.id, reply.payload);
                let split = timing.map(|t| {
                    let handler = Duration::from_micros(u64::from(t.handler_us));
                    let worker = Duration::from_micros(u64::from(t.worker_us));
                    let transfer = round_trip.saturating_sub(worker);
                    let overhead = started.elapsed().saturating_sub(transfer + handler);
                    CallSplit {
                        handler,
                        transfer,
                        overhead,
                    }
                });
                if let Some(split) = split {
                    let add = |counter: &AtomicU64, d: Duration| {
                        counter.fetch_add(
                            u64::try_from(d.as_micros()).unwrap_or(u64::MAX),
                            Ordering::Relaxed,
                        );
                    };
                    add(&self.counters.handler_micros, split.handler);
                    add(&self.counters.transfer_micros, split.transfer);
                    add(&self.counters.overhead_micros, split.overhead);
                }
                Ok((verdict, split))
            }
            Err(e) => {
                let verdict = match e.kind() {
                    Kind::NoResponders => return Err("no worker is serving it".to_owned()),
                    Kind::TimedOut => {
                        self.counters.timeouts.fetch_add(1, Ordering::Relaxed);
                        Verdict::Fault(Fault::with_reason(
                            FaultKind::HandlerTimeout,
                            format!(
                                "remote handler {} did not answer within {} ms",
                                self.stand.name,
                                self.timeout.as_millis()
                            ),
                        ))
                    }
                    _ => return Err(format!("NATS request failed: {e}")),
                };
                Ok((verdict, None))
            }
        }
    }

    /// NATS or the workers are unavailable (`why`): the configured fallback.
    async fn fall_back(&self, message: &Message, why: String) -> Verdict {
        self.counters.fallbacks.fetch_add(1, Ordering::Relaxed);
        self.stand.fall_back(message, "remote handler", why).await
    }

    fn failed(&self, why: String) -> Verdict {
        Verdict::Fault(Fault::with_reason(
            FaultKind::HandlerFailed,
            format!("remote handler {}: {why}", self.stand.name),
        ))
    }

    /// The verdict an answer frame gives, and the worker's timing when the answer is
    /// readable and for this message.
    fn verdict(&self, id: u128, payload: bytes::Bytes) -> (Verdict, Option<WorkerTiming>) {
        let answer = match Answer::decode(payload) {
            Ok(answer) => answer,
            Err(e) => {
                let why = format!("the worker's answer is unreadable: {e}");
                return (self.failed(why), None);
            }
        };
        if answer.id != id {
            let why = format!(
                "the worker answered message {:032x}, not {id:032x}",
                answer.id
            );
            return (self.failed(why), None);
        }
        let verdict = match answer.outcome {
            Outcome::Continue(patch) => Verdict::Continue(patch),
            Outcome::Fault(fault) => Verdict::Fault(fault),
            Outcome::Respond(bytes) => match Envelope::parse(bytes, &self.limits) {
                Ok(envelope) => Verdict::Respond(Box::new(envelope)),
                Err(f) => self.failed(format!(
                    "the worker's response is not a valid envelope: {}",
                    f.reason()
                )),
            },
        };
        (verdict, Some(answer.timing))
    }
}

/// Counts a timeout when the call is dropped unfinished at or after its deadline (the
/// engine's timeout dropped it).
struct TimeoutWatch<'a> {
    counters: &'a RemoteCounters,
    deadline: Instant,
    finished: bool,
}

impl Drop for TimeoutWatch<'_> {
    fn drop(&mut self) {
        if !self.finished && Instant::now() + Duration::from_millis(5) >= self.deadline {
            self.counters.timeouts.fetch_add(1, Ordering::Relaxed);
        }
    }
}

impl Handler for RemoteHandler {
    fn access(&self) -> Access {
        self.stand.access.clone()
    }

    fn call<'a>(&'a self, message: &'a Message) -> HandlerFuture<'a> {
        Box::pin(async move { self.call_split(message).await.0 })
    }

    fn observations(&self) -> Vec<Observation> {
        let mut out = self.stand.local.observations();
        let figures = [
            (
                "remote_calls",
                "Requests a remote handler sent to its workers",
                &self.counters.calls,
            ),
            (
                "remote_timeouts",
                "Remote handler requests unanswered within the handler's timeout",
                &self.counters.timeouts,
            ),
            (
                "remote_fallbacks",
                "Remote handler calls that went to the fallback (NATS or workers unavailable)",
                &self.counters.fallbacks,
            ),
            (
                "remote_handler_micros",
                "Answered remote calls' handler time on the workers, microseconds (Tcomp)",
                &self.counters.handler_micros,
            ),
            (
                "remote_transfer_micros",
                "Answered remote calls' time to and from the workers, microseconds (Tt)",
                &self.counters.transfer_micros,
            ),
            (
                "remote_overhead_micros",
                "Answered remote calls' framing and rebuilding time, microseconds (C)",
                &self.counters.overhead_micros,
            ),
        ];
        out.extend(figures.into_iter().map(|(name, help, counter)| {
            Observation::counter(name, help, counter.load(Ordering::Relaxed))
        }));
        out
    }
}
