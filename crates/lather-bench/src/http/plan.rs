//! The run plan shared by every virtual client: target, request, clock.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use memchr::memmem;
use tokio::time::Instant;

use crate::http::progress::LiveCounters;
use crate::request::RequestTemplate;

/// Everything the connections share, immutable apart from the counters.
#[derive(Debug)]
pub(crate) struct RunPlan {
    /// Resolved target address (resolved once, before the run).
    pub(crate) addr: SocketAddr,
    /// The request every client sends.
    pub(crate) request: RequestTemplate,
    /// `--expect` needle, pre-compiled.
    pub(crate) expect: Option<memmem::Finder<'static>>,
    /// Per-request timeout.
    pub(crate) timeout: Duration,
    /// When the run (warm-up included) started.
    pub(crate) start: Instant,
    /// When the warm-up ends and measurement begins.
    pub(crate) warmup_end: Instant,
    /// When no new request is sent any more.
    pub(crate) end: Instant,
    /// `--requests`: measured requests to send at most.
    pub(crate) max_requests: Option<u64>,
    /// Measured requests handed out so far (closed loop).
    issued: AtomicU64,
    /// Live counters for the progress bar.
    pub(crate) live: LiveCounters,
}

impl RunPlan {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        addr: SocketAddr,
        request: RequestTemplate,
        expect: Option<&str>,
        timeout: Duration,
        warmup: Duration,
        duration: Duration,
        max_requests: Option<u64>,
    ) -> Self {
        let start = Instant::now();
        let warmup_end = start + warmup;
        Self {
            addr,
            request,
            expect: expect.map(|s| memmem::Finder::new(s.as_bytes()).into_owned()),
            timeout,
            start,
            warmup_end,
            end: warmup_end + duration,
            max_requests,
            issued: AtomicU64::new(0),
            live: LiveCounters::default(),
        }
    }

    /// Whether a request sent (or scheduled) at `at` is measured.
    pub(crate) fn is_measured(&self, at: Instant) -> bool {
        at >= self.warmup_end
    }

    /// Claims one of the `--requests` measured requests; `false` once they
    /// are all handed out.
    pub(crate) fn take_ticket(&self) -> bool {
        match self.max_requests {
            None => true,
            Some(max) => self.issued.fetch_add(1, Ordering::Relaxed) < max,
        }
    }
}
