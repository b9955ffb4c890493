//! SOAP over HTTP/1.1: one POST per notification, pipelined on the sink's one keep-alive
//! connection (so notifications arrive in order): each batch is written as it is taken
//! from the queue while the answers to earlier ones are still on their way, up to a window
//! of unanswered ones ([`MAX_WINDOW`] at most); a failed connection is replaced and what
//! it left unanswered sent again, with backoff when that makes no progress. `https://` sinks
//! get the same over TLS. SubscriptionEnd goes on a connection of its own ([`send_once`]).

pub(crate) use super::pipeline::Answered;
use super::pipeline::{MAX_WRITE, Pipeline};
use super::post::post_once;
use super::soap::Template;
use super::wire::{Out, Wire};
use crate::Subscription;
use crate::delivery::address_policy::DeliveryPolicy;
use crate::delivery::sink_queue::Queued;
use crate::delivery::stamped::Stamped;
use crate::delivery::{DeliveryError, Outgoing, RetryPolicy};
use crate::protocol::reply::soap_of;
use http::Uri;
use http::header::{CONTENT_ENCODING, CONTENT_TYPE, HeaderValue};
use lather_envelope::SoapVersion;
use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::{Instant, Sleep};

/// Most notifications written and not yet answered on a sink's connection (less when
/// the sink's queue is smaller: the window is at most the queue's capacity).
pub(crate) const MAX_WINDOW: usize = 1024;

/// One HTTP sink: pipelined POSTs on one keep-alive connection ([`Pipeline`]).
#[derive(Debug)]
pub(crate) struct HttpSink {
    address: String,
    /// `POST {path} HTTP/1.1\r\nHost: {authority}\r\n`, if the address is usable.
    request_line: Option<String>,
    soap: SoapVersion,
    template: Template,
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
    /// The requests of one write (events' payloads shared, not copied).
    wire: Wire,
    /// A notification rendered whole, to compress it.
    scratch: Vec<u8>,
    /// What a request begins with for the last action, reused while the action stays
    /// the same.
    action_parts: Option<ActionParts>,
    /// Notifications of at least this many bytes go gzip-compressed (`None`: never).
    gzip_from: Option<usize>,
}

/// The parts of a request that depend on its action alone.
#[derive(Debug)]
struct ActionParts {
    action: String,
    /// The header lines after the request line (SOAPAction, Content-Type).
    lines: String,
    /// The request line, `lines`, the Content-Length field (value not yet written) and,
    /// where the template splits, the notification's opening.
    start: Vec<u8>,
    /// Where in `start` the Content-Length field's value goes, and where the body begins.
    field: usize,
    body: usize,
}

impl ActionParts {
    /// The parts of `event`'s requests (and every other event's of the same action), to
    /// `line` (the request line and Host), with the notification's opening when `opening`
    /// and the template splits.
    fn new(
        soap: SoapVersion,
        line: &str,
        template: &Template,
        event: &Stamped,
        opening: bool,
    ) -> Result<ActionParts, DeliveryError> {
        let action = template.action(event);
        let h = headers(soap, action)?;
        let mut lines = String::new();
        for (name, value) in [
            ("SOAPAction", h.soap_action),
            ("Content-Type", Some(h.content_type)),
        ] {
            if let Some(value) = value {
                lines.push_str(name);
                lines.push_str(": ");
                lines.push_str(
                    value
                        .to_str()
                        .map_err(|e| DeliveryError::Encode(e.to_string()))?,
                );
                lines.push_str("\r\n");
            }
        }
        let mut start = Vec::new();
        start.extend_from_slice(line.as_bytes());
        start.extend_from_slice(lines.as_bytes());
        let field = start.len() + "Content-Length: ".len();
        start.extend_from_slice(LENGTH_FIELD);
        let body = start.len();
        if opening && template.splits() {
            template.opening(event, &mut start);
        }
        Ok(ActionParts {
            action: action.to_owned(),
            lines,
            start,
            field,
            body,
        })
    }
}

/// The Content-Length field, its value right-aligned in 10 places (leading spaces are
/// optional whitespace) so it can be written after the body.
const LENGTH_FIELD: &[u8] = b"Content-Length:           \r\n\r\n";
const LENGTH_DIGITS: usize = 10;

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
            request_line,
            soap: soap_of(sub),
            template: Template::new(sub),
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
            wire: Wire::default(),
            scratch: Vec::new(),
            action_parts: None,
            gzip_from,
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
    /// connection. An error means every retry failed.
    pub(crate) async fn on_answer(
        &mut self,
        answer: Result<Answered, DeliveryError>,
        ready: &(dyn Fn(&[Queued]) + Send + Sync),
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
                    // The sink closed the connection: the rest goes on a new one.
                    self.written = 0;
                    if self.unsettled() {
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
            self.wire.clear();
            let start = self.written;
            let mut end = start;
            while end < self.unanswered.len() && (end == start || self.wire.len() < MAX_WRITE) {
                let event = Arc::clone(self.unanswered[end].event());
                self.request(&event)?;
                end += 1;
            }
            if end > self.announced {
                let from = self.announced.max(start);
                ready(&self.unanswered.make_contiguous()[from..end]);
                self.announced = end;
            }
            match self
                .pipeline
                .send(&mut self.wire, self.policy.timeout)
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
        self.wire.clear();
        if self.scratch.capacity() > 4 * MAX_WRITE {
            self.scratch = Vec::new();
        }
        Ok(())
    }

    /// Appends the POST of `event` to the buffer.
    fn request(&mut self, event: &Stamped) -> Result<(), DeliveryError> {
        let Some(line) = &self.request_line else {
            return Err(DeliveryError::Refused(format!(
                "{} is not a usable URL",
                self.address
            )));
        };
        let action = self.template.action(event);
        let parts = match &mut self.action_parts {
            Some(parts) if parts.action == action => parts,
            slot => slot.insert(ActionParts::new(
                self.soap,
                line,
                &self.template,
                event,
                // A compressed notification is rendered whole: no opening kept for it.
                self.gzip_from.is_none(),
            )?),
        };
        if let Some(min) = self.gzip_from {
            self.wire.own(line.as_bytes());
            self.wire.own(parts.lines.as_bytes());
            self.scratch.clear();
            self.template.render(event, &mut self.scratch);
            match crate::protocol::compression::gzip(&self.scratch, min) {
                Some(packed) => {
                    self.wire.own(
                        format!(
                            "Content-Encoding: gzip\r\nContent-Length: {}\r\n\r\n",
                            packed.len()
                        )
                        .as_bytes(),
                    );
                    self.wire.own(&packed);
                }
                None => {
                    self.wire
                        .own(format!("Content-Length: {}\r\n\r\n", self.scratch.len()).as_bytes());
                    self.wire.own(&self.scratch);
                }
            }
            return Ok(());
        }
        // The request's start in one piece, then the rest of the body; the length is
        // written once the body is rendered, into its field.
        let field = self.wire.own_len() + parts.field;
        let body_start = self.wire.len() + parts.body;
        self.wire.own(&parts.start);
        if self.template.splits() {
            self.template.rest(event, &mut self.wire);
        } else {
            self.template.render(event, &mut self.wire);
        }
        let mut length = itoa::Buffer::new();
        let digits = length.format(self.wire.len() - body_start);
        if digits.len() > LENGTH_DIGITS {
            return Err(DeliveryError::Encode("notification too long".into()));
        }
        let at = field + LENGTH_DIGITS - digits.len();
        self.wire.own_mut()[at..at + digits.len()].copy_from_slice(digits.as_bytes());
        Ok(())
    }
}

#[derive(Debug, Clone)]
struct Headers {
    soap_action: Option<HeaderValue>,
    content_type: HeaderValue,
}

/// The SOAPAction (1.1) and Content-Type of a message with `action`.
fn headers(soap: SoapVersion, action: &str) -> Result<Headers, DeliveryError> {
    let action = action.replace('"', "%22");
    Ok(match soap {
        SoapVersion::V11 => Headers {
            soap_action: Some(
                HeaderValue::from_str(&format!("\"{action}\""))
                    .map_err(|e| DeliveryError::Encode(e.to_string()))?,
            ),
            content_type: HeaderValue::from_static("text/xml; charset=utf-8"),
        },
        SoapVersion::V12 => Headers {
            soap_action: None,
            content_type: HeaderValue::from_str(&format!(
                "application/soap+xml; charset=utf-8; action=\"{action}\""
            ))
            .map_err(|e| DeliveryError::Encode(e.to_string()))?,
        },
    })
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
