//! SOAP over HTTP/1.1: one POST per notification, pipelined on the sink's one keep-alive
//! connection (so notifications arrive in order): each batch is written as it is taken
//! from the queue while the answers to earlier ones are still on their way, up to a window
//! of unanswered ones ([`MAX_WINDOW`] at most); a failed connection is replaced and what
//! it left unanswered sent again, with backoff when that makes no progress. `https://` sinks
//! get the same over TLS. SubscriptionEnd goes on a connection of its own ([`send_once`]).

use super::http_request::{Requests, headers};
pub(crate) use super::pipeline::Answered;
use super::pipeline::{MAX_WRITE, Pipeline};
use super::post::post_once;
use crate::Subscription;
use crate::delivery::address_policy::DeliveryPolicy;
use crate::delivery::sink_queue::Queued;
use crate::delivery::{DeliveryError, Outgoing, RetryPolicy};
use http::Uri;
use http::header::{CONTENT_ENCODING, CONTENT_TYPE, HeaderValue};
use lather_envelope::SoapVersion;
use std::collections::VecDeque;
use std::pin::Pin;
use std::time::Duration;
use tokio::time::{Instant, Sleep};

/// Most notifications written and not yet answered on a sink's connection (less when
/// the sink's queue is smaller: the window is at most the queue's capacity).
pub(crate) const MAX_WINDOW: usize = 1024;

/// One HTTP sink: pipelined POSTs on one keep-alive connection ([`Pipeline`]).
#[derive(Debug)]
pub(crate) struct HttpSink {
    address: String,
    /// Its requests, and the bytes of the next write.
    requests: Requests,
    policy: RetryPolicy,
    pipeline: Pipeline,
    /// Notifications handed over and not yet answered, oldest first.
    unanswered: VecDeque<Queued>,
    /// Bytes of the events of `unanswered`.
    unanswered_bytes: u64,
    /// Most notifications in `unanswered`.
    window: usize,
    /// How many of `unanswered` (from the front) are written on the current connection.
    written: usize,
    /// How many of `unanswered` (from the front) were announced to `ready` already.
    announced: usize,
    /// When the oldest unanswered notification's answer is overdue.
    deadline: Option<Instant>,
    /// Wakes [`HttpSink::answer`] at or before `deadline`. Deadlines only move later
    /// (each is now plus the timeout), so an answer that moves it does not touch the
    /// timer: when the timer fires early it is set again to the deadline then current.
    /// (Made on the first wait, within the runtime.)
    timer: Option<Pin<Box<Sleep>>>,
    /// Failed connections in a row without an answer in between, and the next backoff.
    failures: u32,
    backoff: Duration,
    /// Whether an answer came since the last failure.
    progress: bool,
}

impl HttpSink {
    pub(crate) fn new(
        sub: &Subscription,
        policy: RetryPolicy,
        gzip_from: Option<usize>,
        window: usize,
        guard: DeliveryPolicy,
    ) -> HttpSink {
        let address = sub.notify_to.address.clone();
        let uri: Option<Uri> = address.parse().ok();
        let tls = crate::delivery::address_policy::is_https(&address);
        let authority = uri
            .as_ref()
            .and_then(|u| u.authority())
            .map(|a| {
                if a.port().is_some() {
                    a.to_string()
                } else {
                    format!("{a}:{}", if tls { 443 } else { 80 })
                }
            })
            .unwrap_or_default();
        let publish = uri
            .as_ref()
            .is_some_and(|u| crate::delivery::address_policy::is_publish_path(u.path()));
        let request_line = uri.as_ref().and_then(|u| {
            let host = u.authority()?.as_str();
            let path = u.path_and_query().map_or("/", |p| p.as_str());
            Some(format!("POST {path} HTTP/1.1\r\nHost: {host}\r\n"))
        });
        HttpSink {
            address,
            requests: Requests::new(sub, request_line, gzip_from),
            policy,
            pipeline: Pipeline::new(authority, guard, publish, tls),
            unanswered: VecDeque::new(),
            unanswered_bytes: 0,
            window: window.clamp(1, MAX_WINDOW),
            written: 0,
            announced: 0,
            deadline: None,
            timer: None,
            failures: 0,
            backoff: policy.first_backoff,
            progress: false,
        }
    }

    /// Writes `batch` behind the notifications still unanswered, without waiting for
    /// answers; `ready` is told of each notification once, as its bytes first go out. An
    /// error means every retry failed.
    pub(crate) async fn send(
        &mut self,
        batch: &mut Vec<Queued>,
        ready: &(dyn Fn(&[Queued]) + Send + Sync),
    ) -> Result<(), DeliveryError> {
        let was_settled = self.unanswered.is_empty();
        for queued in batch.drain(..) {
            self.unanswered_bytes += queued.size();
            self.unanswered.push_back(queued);
        }
        if was_settled {
            self.rearm();
        }
        self.flush(ready).await
    }

    /// Gives the oldest unanswered notification (if any) `policy.timeout` from now.
    fn rearm(&mut self) {
        self.deadline = self
            .unsettled()
            .then(|| Instant::now() + self.policy.timeout);
    }

    /// The notifications handed over and not yet answered, and their events' bytes.
    pub(crate) fn held(&self) -> (usize, u64) {
        (self.unanswered.len(), self.unanswered_bytes)
    }

    /// Whether notifications are written and not yet answered.
    pub(crate) fn unsettled(&self) -> bool {
        !self.unanswered.is_empty()
    }

    /// Whether the window is full: take no more until answers come.
    pub(crate) fn window_full(&self) -> bool {
        self.unanswered.len() >= self.window
    }

    /// The next answers, or an error once the oldest unanswered notification's deadline
    /// has passed. Cancel-safe.
    pub(crate) async fn answer(&mut self) -> Result<Answered, DeliveryError> {
        let timeout = self.policy.timeout;
        loop {
            let deadline = self.deadline.unwrap_or_else(|| Instant::now() + timeout);
            let timer = self
                .timer
                .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
            tokio::select! {
                biased;
                answer = self.pipeline.next() => return answer,
                () = timer.as_mut() => {
                    if Instant::now() >= deadline {
                        return Err(DeliveryError::Timeout(format!(
                            "no answer within {timeout:?}"
                        )));
                    }
                    timer.as_mut().reset(deadline);
                }
            }
        }
    }

    /// Takes answers (or a failure: an error answer, a lost connection, a missed
    /// deadline); after a failure the unanswered notifications go again on a new
    /// connection. `held` is told what the sink still holds ([`HttpSink::held`]) once the
    /// answered notifications are let go, before a new connection is waited for. An error
    /// means every retry failed.
    pub(crate) async fn on_answer(
        &mut self,
        answer: Result<Answered, DeliveryError>,
        ready: &(dyn Fn(&[Queued]) + Send + Sync),
        held: &(dyn Fn(usize, u64) + Send + Sync),
    ) -> Result<(), DeliveryError> {
        // A sink that answers more requests than it was sent on the connection has lost
        // count of them: its answers can no longer be matched to notifications, so the
        // connection is given up like one that failed.
        let answer = answer.and_then(|answered| {
            if answered.count > self.written {
                return Err(DeliveryError::Answer(format!(
                    "{} answered {} requests with {} of them unanswered",
                    self.address, answered.count, self.written
                )));
            }
            Ok(answered)
        });
        match answer {
            Ok(Answered { count, open }) => {
                for queued in self.unanswered.drain(..count) {
                    self.unanswered_bytes -= queued.size();
                }
                self.written -= count;
                self.announced = self.announced.saturating_sub(count);
                self.progress = true;
                self.rearm();
                if !open {
                    // The sink closed the connection: the rest goes on a new one, which
                    // may take retries and backoff; what was answered no longer counts
                    // against the sink's bounds meanwhile.
                    self.written = 0;
                    if self.unsettled() {
                        held(self.unanswered.len(), self.unanswered_bytes);
                        return self.flush(ready).await;
                    }
                }
                Ok(())
            }
            Err(why) => {
                self.pipeline.close();
                self.written = 0;
                self.after_failure(why).await?;
                self.flush(ready).await?;
                // What was sent again has its own time to be answered.
                self.rearm();
                Ok(())
            }
        }
    }

    /// Counts a failed connection: at once again after progress (or the first time a
    /// kept-alive connection turned out closed), else after a backoff that doubles; an
    /// error once `policy.attempts` failed in a row.
    async fn after_failure(&mut self, why: DeliveryError) -> Result<(), DeliveryError> {
        if std::mem::take(&mut self.progress) {
            self.failures = 0;
            self.backoff = self.policy.first_backoff;
            return Ok(());
        }
        self.failures += 1;
        if self.failures >= self.policy.attempts.max(1) {
            return Err(why);
        }
        tokio::time::sleep(self.backoff).await;
        self.backoff = self.backoff.saturating_mul(2);
        Ok(())
    }

    /// Writes the notifications of `unanswered` not yet on the current connection, in
    /// writes of about [`MAX_WRITE`] bytes, replacing a connection that fails.
    async fn flush(
        &mut self,
        ready: &(dyn Fn(&[Queued]) + Send + Sync),
    ) -> Result<(), DeliveryError> {
        while self.written < self.unanswered.len() {
            let reused = self.pipeline.connected();
            self.requests.wire.clear();
            let start = self.written;
            let mut end = start;
            while end < self.unanswered.len()
                && (end == start || self.requests.wire.len() < MAX_WRITE)
            {
                // The event borrowed, not its reference counted: a count changed per
                // notification is an atomic read-modify-write, which on x86 waits for
                // every store of the request just written to drain.
                self.requests
                    .append(&self.address, self.unanswered[end].event())?;
                end += 1;
            }
            if end > self.announced {
                let from = self.announced.max(start);
                ready(&self.unanswered.make_contiguous()[from..end]);
                self.announced = end;
            }
            match self
                .pipeline
                .send(&mut self.requests.wire, self.policy.timeout)
                .await
            {
                Ok(()) => self.written = end,
                Err(why) => {
                    self.written = 0;
                    // A kept-alive connection the sink closed meanwhile: once more at once.
                    if reused && self.failures == 0 {
                        self.progress = true;
                    }
                    self.after_failure(why).await?;
                }
            }
        }
        self.requests.clear(4 * MAX_WRITE);
        Ok(())
    }
}

/// POSTs `out` to `address` once on a connection of its own; success is a 2xx answer.
/// The host is resolved and checked by `guard` first ([`post_once`]).
pub(crate) async fn send_once(
    address: &str,
    soap: SoapVersion,
    out: &Outgoing,
    timeout: Duration,
    guard: &DeliveryPolicy,
) -> Result<(), DeliveryError> {
    let h = headers(soap, &out.action)?;
    let mut fields = http::HeaderMap::new();
    if let Some(soap_action) = h.soap_action {
        fields.insert("soapaction", soap_action);
    }
    fields.insert(CONTENT_TYPE, h.content_type);
    if let Some(encoding) = out.content_encoding {
        fields.insert(CONTENT_ENCODING, HeaderValue::from_static(encoding));
    }
    post_once(guard, address, fields, out.envelope.clone(), timeout).await
}
