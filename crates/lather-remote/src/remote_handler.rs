//! `RemoteHandler`: a handler stage that runs on a worker, reached through NATS.

use crate::call::{Call, Exchange, exchange};
use crate::frame::{Answer, RemoteVerdict, WorkerTiming};
use crate::latency::Latencies;
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
use tracing::Instrument;

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
    /// Requests whose worker was lost: not acknowledged within `ack_timeout_ms`, or silent
    /// for three heartbeat intervals after the acknowledgement.
    pub lost: AtomicU64,
    /// Lost requests of an idempotent kind sent again (to any worker of the queue group).
    pub retries: AtomicU64,
    /// Requests out when the connection to NATS dropped (failed over at once).
    pub disconnects: AtomicU64,
    /// Requests the caller stopped waiting for before the answer, the timeout or a loss
    /// (the message's future was dropped: its client went away).
    pub abandoned: AtomicU64,
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
    /// The part of C spent on the worker: from reading the request to framing the answer,
    /// less the handler's time.
    pub at_worker: Duration,
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
/// The worker acknowledges each request at once and heartbeats it while it runs, so a
/// lost worker is known in milliseconds ([`crate::Liveness`]): a lost call of an
/// [idempotent](RemoteHandler::idempotent) handler is sent once more (the queue group
/// hands it to any worker), any other ends with `RemoteCallLost` — it may have run.
/// NATS not connected, no worker listening, or the connection dropping mid-call (for a
/// call that may safely run again): the `fallback` runs the local instance or answers
/// `HandlerFailed` naming the subject and URL. An answer that does not come within the
/// timeout (the step's, or the [adaptive one](RemoteHandler::adaptive_timeout)) is a
/// `HandlerTimeout` fault.
pub struct RemoteHandler {
    stand: StandIn,
    timeout: Duration,
    limits: Limits,
    idempotent: bool,
    adaptive: bool,
    latencies: Latencies,
    counters: RemoteCounters,
}

impl std::fmt::Debug for RemoteHandler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteHandler")
            .field("stand_in", &self.stand)
            .field("idempotent", &self.idempotent)
            .field("adaptive", &self.adaptive)
            .finish_non_exhaustive()
    }
}

/// Why a call went nowhere: nothing ran, or what ran may safely run again — the caller
/// takes the fallback.
type Unavailable = String;

impl RemoteHandler {
    /// The remote stand-in for `local`, configured as `name`, through `link`. `timeout` is
    /// the step's per-attempt timeout (sent as the deadline); a `Respond` envelope from a
    /// worker is parsed within `limits`. Not idempotent (a lost call is not sent again)
    /// and with a fixed timeout until told otherwise.
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
            idempotent: false,
            adaptive: false,
            latencies: Latencies::default(),
            counters: RemoteCounters::default(),
        }
    }

    /// Whether running the handler twice for one message does no harm (no state outside
    /// the message changes, nothing is sent or written twice): then a call whose worker was
    /// lost is sent once more, and one cut off by a NATS outage takes the fallback.
    pub fn idempotent(mut self, idempotent: bool) -> Self {
        self.idempotent = idempotent;
        self
    }

    /// Whether the timeout adapts (for a handler whose `timeout_ms` is not set): once
    /// [`ADAPTIVE_AFTER_CALLS`](crate::ADAPTIVE_AFTER_CALLS) calls are measured, a call
    /// gets `max(100 ms, 10 × p99)` of the recent calls, never more than the step's timeout.
    pub fn adaptive_timeout(mut self, adaptive: bool) -> Self {
        self.adaptive = adaptive;
        self
    }

    /// The counters.
    pub fn counters(&self) -> &RemoteCounters {
        &self.counters
    }

    /// The timeout the next call gets.
    pub fn current_timeout(&self) -> Duration {
        if self.adaptive {
            self.latencies.timeout(self.timeout)
        } else {
            self.timeout
        }
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
    /// worker was unavailable (nothing ran, or what ran may run again; the caller decides
    /// what to do and counts it).
    pub async fn try_call_split(
        &self,
        message: &Message,
    ) -> Result<(Verdict, Option<CallSplit>), String> {
        let id = message.context().id;
        let mut watch = CallWatch {
            handler: &self.stand.name,
            id,
            counters: &self.counters,
            deadline: Instant::now() + self.timeout,
            finished: false,
        };
        let mut resent = 0;
        let result = loop {
            match self.attempt(message, resent).await {
                Attempt::Done(answered) => break Ok(answered),
                Attempt::Unavailable(why) => break Err(why),
                Attempt::Lost(why) if self.idempotent && resent == 0 => {
                    self.counters.retries.fetch_add(1, Ordering::Relaxed);
                    tracing::warn!(handler = %self.stand.name, id = %format_args!("{id:032x}"), %why, "remote call lost; sending it again");
                    resent += 1;
                }
                Attempt::Lost(why) if self.idempotent => {
                    tracing::warn!(handler = %self.stand.name, id = %format_args!("{id:032x}"), %why, "remote call lost again; taking the fallback");
                    break Err(format!("{why}, twice"));
                }
                Attempt::Lost(why) => {
                    tracing::warn!(handler = %self.stand.name, id = %format_args!("{id:032x}"), %why, "remote call lost; not idempotent, so not sent again");
                    break Ok((
                        Verdict::Fault(Fault::with_reason(
                            FaultKind::RemoteCallLost,
                            format!(
                                "remote handler {}: {why}; it may or may not have run, and it is not sent again (not idempotent)",
                                self.stand.name
                            ),
                        )),
                        None,
                    ));
                }
            }
        };
        watch.finished = true;
        result
    }

    /// One request to the workers, `resent` times sent before.
    async fn attempt(&self, message: &Message, resent: u32) -> Attempt {
        // Watched from before the connection is checked, so no drop goes unseen.
        let drops = self.stand.link.drops();
        let Some(client) = self.stand.link.available() else {
            return Attempt::Unavailable("NATS is not connected".to_owned());
        };
        let router = match self.stand.link.router().await {
            Ok(router) => router,
            Err(why) => return Attempt::Unavailable(why),
        };
        let started = Instant::now();
        let timeout = self.current_timeout();
        let deadline_unix_ms = SystemTime::now()
            .checked_add(timeout)
            .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
            .map_or(u64::MAX, |d| {
                u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
            });
        let liveness = self.stand.link.liveness();
        let mut request = request_for(
            &self.stand.name,
            &self.stand.access,
            message,
            current_attempt().saturating_add(resent),
            deadline_unix_ms,
        );
        // The exported call span's context replaces the message-id trace context.
        let span =
            lather_pipeline::telemetry::remote_call_span(&self.stand.name, &self.stand.subject);
        if let Some(traceparent) = lather_pipeline::telemetry::traceparent_of(&span) {
            request.trace = Some(traceparent);
        }
        request.heartbeat_ms = u32::try_from(liveness.heartbeat.as_millis())
            .unwrap_or(u32::MAX)
            .max(1);
        let frame = match request.encode() {
            Ok(frame) => frame,
            Err(e) => {
                return Attempt::Done((
                    self.failed(format!("the message cannot be framed: {e}")),
                    None,
                ));
            }
        };
        self.counters.calls.fetch_add(1, Ordering::Relaxed);
        let call = Call {
            subject: &self.stand.subject,
            frame,
            id: request.id,
            liveness,
            timeout,
        };
        let ended = exchange(client, call, drops, router, self.stand.link.batcher())
            .instrument(span)
            .await;
        let id = request.id;
        let lost = |why: String| {
            self.counters.lost.fetch_add(1, Ordering::Relaxed);
            Attempt::Lost(why)
        };
        match ended {
            Exchange::Answered {
                payload,
                round_trip,
            } => {
                self.latencies.record(round_trip);
                let (verdict, timing) = self.verdict(id, payload);
                let split = timing.map(|t| self.split(t, round_trip, started));
                Attempt::Done((verdict, split))
            }
            Exchange::NoResponders => Attempt::Unavailable("no worker is serving it".to_owned()),
            Exchange::Unsent(why) => Attempt::Unavailable(format!("NATS request failed: {why}")),
            Exchange::NotTaken => lost(format!(
                "no worker acknowledged the call within {} ms",
                liveness.ack_timeout.as_millis()
            )),
            Exchange::Silent => lost(format!(
                "the worker went silent for {} ms with the call in hand",
                liveness.silence().as_millis()
            )),
            Exchange::Disconnected { taken } => {
                self.counters.disconnects.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(handler = %self.stand.name, id = %format_args!("{id:032x}"), taken, "the NATS connection dropped with a remote call out");
                if taken && !self.idempotent {
                    let fault = Fault::with_reason(
                        FaultKind::RemoteCallLost,
                        format!(
                            "remote handler {}: the connection to NATS dropped with the call in a worker's hands; it may or may not have run, and it is not run again (not idempotent)",
                            self.stand.name
                        ),
                    );
                    Attempt::Done((Verdict::Fault(fault), None))
                } else {
                    Attempt::Unavailable("the connection to NATS dropped mid-call".to_owned())
                }
            }
            Exchange::TimedOut { taken } => {
                self.latencies.record(timeout);
                self.counters.timeouts.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(handler = %self.stand.name, id = %format_args!("{id:032x}"), timeout_ms = timeout.as_millis(), taken, "remote call timed out");
                Attempt::Done((
                    Verdict::Fault(Fault::with_reason(
                        FaultKind::HandlerTimeout,
                        format!(
                            "remote handler {} did not answer within {} ms",
                            self.stand.name,
                            timeout.as_millis()
                        ),
                    )),
                    None,
                ))
            }
        }
    }

    /// The answered call's split, added to the counters.
    fn split(&self, t: WorkerTiming, round_trip: Duration, started: Instant) -> CallSplit {
        let handler = Duration::from_micros(u64::from(t.handler_us));
        let worker = Duration::from_micros(u64::from(t.worker_us));
        let transfer = round_trip.saturating_sub(worker);
        let overhead = started.elapsed().saturating_sub(transfer + handler);
        let split = CallSplit {
            handler,
            transfer,
            overhead,
            at_worker: worker.saturating_sub(handler),
        };
        let add = |counter: &AtomicU64, d: Duration| {
            counter.fetch_add(
                u64::try_from(d.as_micros()).unwrap_or(u64::MAX),
                Ordering::Relaxed,
            );
        };
        add(&self.counters.handler_micros, split.handler);
        add(&self.counters.transfer_micros, split.transfer);
        add(&self.counters.overhead_micros, split.overhead);
        split
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
        let verdict = match answer.verdict {
            RemoteVerdict::Continue(patch) => Verdict::Continue(patch),
            RemoteVerdict::Fault(fault) => Verdict::Fault(fault),
            RemoteVerdict::Respond(bytes) => match Envelope::parse(bytes, &self.limits) {
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

/// How one request to the workers ended.
enum Attempt {
    /// With a verdict (the answer's, a timeout's, a loss that cannot be repeated).
    Done((Verdict, Option<CallSplit>)),
    /// Nothing ran, or what ran may run again: the fallback.
    Unavailable(Unavailable),
    /// The worker was lost with the call (it may have run).
    Lost(String),
}

/// Watches a call from the caller's side: dropped unfinished at or after the step's
/// deadline, the engine's timeout ended it (a timeout, logged); dropped earlier, the
/// message's client went away (abandoned).
struct CallWatch<'a> {
    handler: &'a str,
    id: u128,
    counters: &'a RemoteCounters,
    deadline: Instant,
    finished: bool,
}

impl Drop for CallWatch<'_> {
    fn drop(&mut self) {
        if self.finished {
            return;
        }
        let id = format_args!("{:032x}", self.id);
        if Instant::now() + Duration::from_millis(5) >= self.deadline {
            self.counters.timeouts.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(handler = %self.handler, %id, "remote call timed out (the step's timeout)");
        } else {
            self.counters.abandoned.fetch_add(1, Ordering::Relaxed);
            tracing::info!(handler = %self.handler, %id, "remote call abandoned: the message is no longer waited for");
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
            (
                "remote_lost",
                "Remote calls whose worker was lost (no acknowledgement, or heartbeats stopped)",
                &self.counters.lost,
            ),
            (
                "remote_retries",
                "Lost remote calls of an idempotent handler sent again",
                &self.counters.retries,
            ),
            (
                "remote_disconnects",
                "Remote calls out when the NATS connection dropped (failed over at once)",
                &self.counters.disconnects,
            ),
            (
                "remote_abandoned",
                "Remote calls whose message stopped being waited for (its client went away)",
                &self.counters.abandoned,
            ),
        ];
        out.extend(figures.into_iter().map(|(name, help, counter)| {
            Observation::counter(name, help, counter.load(Ordering::Relaxed))
        }));
        if let Some(batches) = self
            .stand
            .link
            .batcher()
            .map(|b| b.counters(&self.stand.subject))
        {
            out.push(Observation::counter(
                "remote_batches",
                "NATS messages that carried several of a remote handler's calls ([nats] batch_max_items)",
                batches.batches.load(Ordering::Relaxed),
            ));
            out.push(Observation::counter(
                "remote_batched_calls",
                "Remote calls that went in such a message",
                batches.calls.load(Ordering::Relaxed),
            ));
        }
        out.push(Observation::gauge(
            "remote_timeout_ms",
            "The timeout a remote call gets now, milliseconds (adaptive when timeout_ms is not set)",
            u64::try_from(self.current_timeout().as_millis()).unwrap_or(u64::MAX),
        ));
        out
    }
}
