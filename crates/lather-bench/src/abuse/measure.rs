//! Measuring one case: the server's RSS (sampled for its peak) and CPU time
//! around it, and the probe beside it.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use super::probe::ProbeStats;
use crate::procfs::WatchedProcess;

/// How often the RSS is sampled for the peak.
const RSS_EVERY: Duration = Duration::from_millis(25);

/// Samples a process's RSS on a thread of its own until stopped.
#[derive(Debug)]
pub(crate) struct RssSampler {
    stop: Arc<AtomicBool>,
    peak: Arc<AtomicU64>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl RssSampler {
    /// Starts sampling `watched`; `initial` counts as the first sample.
    pub(crate) fn start(watched: WatchedProcess, initial: u64) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let peak = Arc::new(AtomicU64::new(initial));
        let (flag, max) = (Arc::clone(&stop), Arc::clone(&peak));
        let thread = std::thread::Builder::new()
            .name("abuse-rss".into())
            .spawn(move || {
                while !flag.load(Ordering::Relaxed) {
                    if let Ok(rss) = watched.rss_bytes() {
                        max.fetch_max(rss, Ordering::Relaxed);
                    }
                    std::thread::sleep(RSS_EVERY);
                }
            })
            .ok();
        RssSampler { stop, peak, thread }
    }

    /// Stops sampling; returns the peak seen.
    pub(crate) fn finish(mut self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        self.peak.load(Ordering::Relaxed)
    }
}

/// One row of the final table.
#[derive(Debug, Clone)]
pub(crate) struct Row {
    /// Case letter and name, e.g. `a slot leak`.
    pub(crate) case: String,
    /// Whether the hostile input got the expected treatment.
    pub(crate) met: bool,
    /// What was seen (the facts the expectation checked).
    pub(crate) note: String,
    /// Server RSS before the case, bytes.
    pub(crate) rss_before: u64,
    /// Peak RSS sampled during the case, bytes.
    pub(crate) rss_peak: u64,
    /// RSS after the case, bytes.
    pub(crate) rss_after: u64,
    /// Server CPU time used during the case.
    pub(crate) cpu: Duration,
    /// The probe beside the case.
    pub(crate) probe: ProbeStats,
}

/// Renders `rows` as a markdown table.
pub(crate) fn table(rows: &[Row]) -> String {
    use std::fmt::Write as _;
    let mb = |b: u64| b as f64 / (1024.0 * 1024.0);
    let mut s = String::from(
        "| case | expectation met | RSS before / peak / after MB | server CPU s | probe p50 / p99 ms | probe failures | seen |\n\
         |---|---|---|---|---|---|---|\n",
    );
    for r in rows {
        let _ = writeln!(
            s,
            "| {} | {} | {:.1} / {:.1} / {:.1} | {:.2} | {:.1} / {:.1} | {} | {} |",
            r.case,
            if r.met { "yes" } else { "NO" },
            mb(r.rss_before),
            mb(r.rss_peak),
            mb(r.rss_after),
            r.cpu.as_secs_f64(),
            r.probe.p50_ms,
            r.probe.p99_ms,
            r.probe.failures,
            r.note.replace('|', "/"),
        );
    }
    s
}
