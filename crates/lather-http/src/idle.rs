//! Stalled connections: a connection that moves no byte for `idle_timeout_ms` while none of
//! its requests is being handled is closed — from accept on, not from its first byte; and
//! on plain HTTP/1.1, a request head begun and not complete within `header_timeout_ms`
//! (slowloris) is cut. One watch per connection does both, from what the connection's
//! reads and writes report: no timer is set per request.
//!
//! A head's time runs from its first byte read while no request is handled, or from the
//! last byte written of an answer still going out when it was read. Bytes of a next head
//! that arrive with a request (or while one is handled) are not timed until the client
//! sends more: such a partial head is held at most until the idle timeout and then the
//! header timeout.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// `head_since_ms` when no request head is arriving.
const NO_HEAD: u64 = u64::MAX;

/// The shortest wait between two looks for a head begun (a tiny `header_timeout_ms` does
/// not make every connection's watch wake each millisecond).
const MIN_CHECK_MS: u64 = 10;

/// The first bytes of an HTTP/2 connection (RFC 9113 §3.4): a connection that starts with
/// them has no HTTP/1.1 heads to time.
const H2_PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n";

/// What one connection did lately: when a byte last moved, how many of its requests are
/// being handled, and since when a request head has been arriving.
#[derive(Debug)]
pub(crate) struct Activity {
    start: Instant,
    /// Milliseconds from `start` to the last byte read or written.
    last_ms: AtomicU64,
    busy: AtomicUsize,
    /// Milliseconds from `start` to the first byte of the request head now arriving
    /// ([`NO_HEAD`] when none is: a head is complete once its request is being handled).
    head_since_ms: AtomicU64,
    /// Whether heads are timed here: plain connections, until one turns out HTTP/2.
    heads: AtomicBool,
    /// Whether a byte was read yet (the first read tells HTTP/2 from HTTP/1).
    read_any: AtomicBool,
}

/// Why a connection's watch ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stall {
    /// No byte moved for the idle timeout, no request being handled.
    Idle,
    /// A request head begun was not complete within the header timeout.
    SlowHead,
}

impl Activity {
    /// The activity of a new connection; `heads`: whether its request heads are timed
    /// here (plain connections; over TLS hyper times them, the bytes seen here being TLS
    /// records).
    pub(crate) fn new(heads: bool) -> Arc<Self> {
        Arc::new(Activity {
            start: Instant::now(),
            last_ms: AtomicU64::new(0),
            busy: AtomicUsize::new(0),
            head_since_ms: AtomicU64::new(NO_HEAD),
            heads: AtomicBool::new(heads),
            read_any: AtomicBool::new(false),
        })
    }

    fn now_ms(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX - 1)
    }

    fn touch(&self) -> u64 {
        let ms = self.now_ms();
        self.last_ms.store(ms, Ordering::Relaxed);
        ms
    }

    /// Marks one request as being handled until the guard drops: its head is complete.
    pub(crate) fn busy(self: &Arc<Self>) -> Busy {
        self.busy.fetch_add(1, Ordering::Relaxed);
        self.head_since_ms.store(NO_HEAD, Ordering::Relaxed);
        Busy(self.clone())
    }

    /// Whether a request is being answered now.
    pub(crate) fn handling(&self) -> bool {
        self.busy.load(Ordering::Relaxed) > 0
    }

    /// Whether request heads are timed here: a plain HTTP/1.1 connection.
    pub(crate) fn times_heads(&self) -> bool {
        self.heads.load(Ordering::Relaxed)
    }

    /// Completes once the connection has stalled: idle for `idle` (no byte moved and no
    /// request handled for that long), or — where heads are timed here — a request head
    /// begun `head` ago and not complete.
    pub(crate) async fn stalled(&self, idle: Duration, head: Duration) -> Stall {
        let idle_ms = u64::try_from(idle.as_millis()).unwrap_or(u64::MAX);
        let head_ms = u64::try_from(head.as_millis()).unwrap_or(u64::MAX);
        loop {
            let now = self.now_ms();
            let handling = self.busy.load(Ordering::Relaxed) > 0;
            let quiet = now.saturating_sub(self.last_ms.load(Ordering::Relaxed));
            if !handling && quiet >= idle_ms {
                return Stall::Idle;
            }
            // Until the idle timeout could be reached; a head is checked at its deadline,
            // or at least every half header timeout, so one begun meanwhile is seen in time.
            let mut wait = if handling { idle_ms } else { idle_ms - quiet };
            if self.heads.load(Ordering::Relaxed) {
                let since = self.head_since_ms.load(Ordering::Relaxed);
                if since == NO_HEAD || handling {
                    wait = wait.min((head_ms / 2).max(MIN_CHECK_MS));
                } else {
                    let arriving = now.saturating_sub(since);
                    if arriving >= head_ms {
                        return Stall::SlowHead;
                    }
                    wait = wait.min(head_ms - arriving);
                }
            }
            tokio::time::sleep(Duration::from_millis(wait.max(1))).await;
        }
    }
}

/// A request being handled; the connection is not idle while one lives.
#[derive(Debug)]
pub(crate) struct Busy(Arc<Activity>);

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.touch();
        self.0.busy.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Any byte moved is activity; a byte read while no request is being handled begins a
/// request head (unless one is arriving already).
impl crate::watched::Traffic for Activity {
    fn read(&self, bytes: &[u8]) {
        let ms = self.touch();
        if !self.heads.load(Ordering::Relaxed) {
            return;
        }
        if !self.read_any.swap(true, Ordering::Relaxed) && bytes.starts_with(H2_PREFACE) {
            // HTTP/2 (prior knowledge): its frames between requests are not heads. Only a
            // first read holding the whole preface line counts, so an HTTP/1.1 head that
            // merely starts like it ("PRI /…") is still timed.
            self.heads.store(false, Ordering::Relaxed);
            return;
        }
        if self.busy.load(Ordering::Relaxed) == 0 {
            let _ = self.head_since_ms.compare_exchange(
                NO_HEAD,
                ms,
                Ordering::Relaxed,
                Ordering::Relaxed,
            );
        }
    }

    fn written(&self, _: usize) {
        let ms = self.touch();
        // Still writing the answer to an earlier request: a next request read meanwhile (a
        // pipelining client) waits for it, so its head's time starts over with each write —
        // it counts from the answer's last byte, as hyper's own timer did.
        let since = self.head_since_ms.load(Ordering::Relaxed);
        if since != NO_HEAD && self.busy.load(Ordering::Relaxed) == 0 {
            let _ = self.head_since_ms.compare_exchange(
                since,
                ms,
                Ordering::Relaxed,
                Ordering::Relaxed,
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::watched::Traffic as _;

    const LONG: Duration = Duration::from_secs(60);
    const SHORT: Duration = Duration::from_millis(40);

    #[tokio::test]
    async fn a_head_begun_and_not_finished_is_a_slow_head() {
        let activity = Activity::new(true);
        activity.read(b"POST /echo HTTP/1.1\r\n");
        assert_eq!(activity.stalled(LONG, SHORT).await, Stall::SlowHead);
    }

    #[tokio::test]
    async fn a_head_that_completes_is_not_timed_and_the_next_one_is() {
        let activity = Activity::new(true);
        activity.read(b"POST /echo HTTP/1.1\r\n");
        let busy = activity.busy();
        // Being handled (body bytes arriving, however slowly): neither stall applies.
        activity.read(b"<s:Envelope");
        let watch = activity.stalled(SHORT, SHORT);
        assert!(
            tokio::time::timeout(SHORT * 4, watch).await.is_err(),
            "a request being handled was cut"
        );
        drop(busy);
        activity.read(b"POST /echo HTTP/1.1\r\n");
        assert_eq!(activity.stalled(LONG, SHORT).await, Stall::SlowHead);
    }

    #[tokio::test]
    async fn a_next_head_read_while_an_answer_is_written_is_timed_from_its_last_byte() {
        let activity = Activity::new(true);
        activity.read(b"POST /echo HTTP/1.1\r\n\r\n");
        drop(activity.busy());
        // The client pipelines its next request while the answer is still being written,
        // slowly, for longer than the header timeout.
        activity.read(b"POST /echo HTTP/1.1\r\n");
        let watch = activity.stalled(LONG, SHORT);
        let writer = async {
            for _ in 0..8 {
                activity.written(4096);
                tokio::time::sleep(SHORT / 2).await;
            }
        };
        tokio::select! {
            stall = watch => panic!("cut while the answer was written: {stall:?}"),
            () = writer => {}
        }
        // The answer written, the head's time runs.
        assert_eq!(activity.stalled(LONG, SHORT).await, Stall::SlowHead);
    }

    #[tokio::test]
    async fn silence_is_idle_not_a_slow_head() {
        let activity = Activity::new(true);
        assert_eq!(activity.stalled(SHORT, SHORT / 2).await, Stall::Idle);
    }

    #[tokio::test]
    async fn a_head_that_only_starts_like_the_http2_preface_is_timed() {
        let activity = Activity::new(true);
        activity.read(b"PRI");
        activity.read(b" /x HTTP/1.1\r\n");
        assert_eq!(activity.stalled(LONG, SHORT).await, Stall::SlowHead);
    }

    #[tokio::test]
    async fn http2_and_untimed_connections_have_no_slow_heads() {
        for (heads, first) in [
            (true, &b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"[..]),
            (false, &b"POST /echo HTTP/1.1\r\n"[..]),
        ] {
            let activity = Activity::new(heads);
            activity.read(first);
            activity.read(b"more bytes, no request");
            let watch = activity.stalled(LONG, SHORT);
            assert!(
                tokio::time::timeout(SHORT * 4, watch).await.is_err(),
                "cut as a slow head: {heads} {first:?}"
            );
        }
    }
}
