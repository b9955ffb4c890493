//! Accepting when descriptors run out: one descriptor is held in reserve (an open
//! `/dev/null`); on `EMFILE`/`ENFILE` it is closed, the pending connection accepted and
//! closed at once (the client sees a closed connection, not a hang), and the reserve
//! reopened. The warning is logged at most once per [`WARN_EVERY`], so a flood of failed
//! accepts neither spins nor floods the log.

use crate::metrics::ConnectionMetrics;
use futures_util::FutureExt;
use std::fs::File;
use std::io;
use std::time::{Duration, Instant};
use tokio::net::TcpListener;

/// The least time between two warnings about failed accepts.
const WARN_EVERY: Duration = Duration::from_secs(5);

/// Linux (and BSD) `ENFILE` and `EMFILE`: out of descriptors, system-wide or per process.
const OUT_OF_DESCRIPTORS: [i32; 2] = [23, 24];

/// The reserve descriptor and the warning's rate limit.
#[derive(Debug)]
pub(crate) struct AcceptErrors {
    reserve: Option<File>,
    last_warning: Option<Instant>,
    unreported: u64,
}

impl AcceptErrors {
    pub(crate) fn new() -> Self {
        AcceptErrors {
            reserve: open_reserve(),
            last_warning: None,
            unreported: 0,
        }
    }

    /// Handles a failed accept on `listener`: sheds one pending connection when out of
    /// descriptors, else pauses briefly; counts it and warns at a bounded rate.
    pub(crate) async fn failed(
        &mut self,
        error: &io::Error,
        listener: &TcpListener,
        metrics: &ConnectionMetrics,
    ) {
        metrics.accept_error();
        let out_of_fds = error
            .raw_os_error()
            .is_some_and(|code| OUT_OF_DESCRIPTORS.contains(&code));
        let mut shed = false;
        if out_of_fds && let Some(reserve) = self.reserve.take() {
            drop(reserve);
            if let Some(Ok((stream, _))) = listener.accept().now_or_never() {
                drop(stream);
                shed = true;
            }
            self.reserve = open_reserve();
        }
        self.warn(error, shed);
        if !shed {
            // Nothing was taken off the queue: wait a little instead of spinning.
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    fn warn(&mut self, error: &io::Error, shed: bool) {
        let now = Instant::now();
        if self
            .last_warning
            .is_some_and(|last| now.duration_since(last) < WARN_EVERY)
        {
            self.unreported += 1;
            return;
        }
        tracing::warn!(
            error = %error,
            shed_a_connection = shed,
            not_logged_since_last = self.unreported,
            "accept failed (raise `ulimit -n` or lower max_connections if out of descriptors)"
        );
        self.last_warning = Some(now);
        self.unreported = 0;
    }
}

fn open_reserve() -> Option<File> {
    File::open("/dev/null").ok()
}
