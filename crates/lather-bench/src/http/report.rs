//! The benchmark report: summary numbers, JSON output, and the human
//! summary.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use hdrhistogram::Histogram;
use serde::Serialize;
use tokio::time::Instant;

use crate::error::BenchError;
use crate::http::ErrorKind;
use crate::http::plan::RunPlan;
use crate::http::stats::Stats;
use crate::procfs::{CpuTicks, WatchedProcess};

/// How requests were paced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Pacing {
    /// Each connection sends its next request when the previous answer is in.
    Closed,
    /// Requests are sent at a fixed rate regardless of answers.
    Open,
}

/// A distribution of durations, in microseconds: the latency of successful
/// requests ([`Report::latency_us`]) or the open loop's send delay
/// ([`OpenLoopReport::send_delay_us`]).
///
/// In the open loop latency counts from the scheduled send time, so time a
/// request spent queued in the generator is included.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct LatencySummary {
    /// Number of samples.
    pub count: u64,
    /// Smallest value.
    pub min: u64,
    /// Arithmetic mean.
    pub mean: f64,
    /// Median.
    pub p50: u64,
    /// 90th percentile.
    pub p90: u64,
    /// 99th percentile.
    pub p99: u64,
    /// 99.9th percentile.
    pub p999: u64,
    /// Largest value.
    pub max: u64,
    /// Standard deviation.
    pub stdev: f64,
}

impl LatencySummary {
    fn from_histogram(h: &Histogram<u64>) -> Self {
        if h.is_empty() {
            return Self::default();
        }
        Self {
            count: h.len(),
            min: h.min(),
            mean: h.mean(),
            p50: h.value_at_quantile(0.50),
            p90: h.value_at_quantile(0.90),
            p99: h.value_at_quantile(0.99),
            p999: h.value_at_quantile(0.999),
            max: h.max(),
            stdev: h.stdev(),
        }
    }

    /// The summaries of several runs of one measurement as one: count, minimum and maximum
    /// exact; mean and standard deviation pooled over every sample; each percentile the
    /// median of the runs' (the samples themselves are gone).
    pub fn combine(parts: &[LatencySummary]) -> LatencySummary {
        let parts: Vec<&LatencySummary> = parts.iter().filter(|p| p.count > 0).collect();
        let count: u64 = parts.iter().map(|p| p.count).sum();
        if count == 0 {
            return LatencySummary::default();
        }
        let n = count as f64;
        let mean = parts.iter().map(|p| p.mean * p.count as f64).sum::<f64>() / n;
        let spread: f64 = parts
            .iter()
            .map(|p| p.count as f64 * (p.stdev.powi(2) + (p.mean - mean).powi(2)))
            .sum();
        let median = |pick: fn(&LatencySummary) -> u64| {
            let mut values: Vec<u64> = parts.iter().map(|p| pick(p)).collect();
            values.sort_unstable();
            values[values.len() / 2]
        };
        LatencySummary {
            count,
            min: parts.iter().map(|p| p.min).min().unwrap_or(0),
            mean,
            p50: median(|p| p.p50),
            p90: median(|p| p.p90),
            p99: median(|p| p.p99),
            p999: median(|p| p.p999),
            max: parts.iter().map(|p| p.max).max().unwrap_or(0),
            stdev: (spread / n).sqrt(),
        }
    }
}

/// Open-loop figures (measured requests only).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OpenLoopReport {
    /// Requests scheduled after the warm-up (sent or dropped).
    pub scheduled: u64,
    /// Requests that left more than `late_threshold_us` after their
    /// scheduled time because no connection was free.
    pub sent_late: u64,
    /// The lateness threshold (µs).
    pub late_threshold_us: u64,
    /// Largest delay between a request's schedule and its sending (µs).
    pub max_send_delay_us: u64,
    /// Delay between each request's scheduled time and the moment a
    /// connection took it up (µs): the pacer's lag (about 100–200 µs on a
    /// machine that is not saturated) plus, when every connection was busy,
    /// the time the request waited for one.
    pub send_delay_us: LatencySummary,
    /// Requests not sent at all because the backlog was full.
    pub dropped_by_generator: u64,
    /// Backlog bound (queued requests).
    pub backlog_capacity: u64,
    /// Requests sent (ok or failed) per second of sending: over the
    /// scheduled window (`scheduled / rate`), or until the last send when
    /// the generator fell behind. Below `rate` when requests were dropped or
    /// could not be sent on time.
    pub achieved_rate: f64,
}

/// The result of a benchmark run.
///
/// Counts cover measured requests only (after the warm-up).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    /// Closed or open loop.
    pub mode: Pacing,
    /// TargetUrl URL.
    pub url: String,
    /// Number of connections.
    pub connections: usize,
    /// TargetUrl rate (open loop), requests/s.
    pub rate: Option<f64>,
    /// Warm-up length, s.
    pub warmup_s: f64,
    /// Measured duration, s: from the end of the warm-up to the last answer
    /// (at least the requested duration unless `--requests` ended the run).
    pub duration_s: f64,
    /// Size of the request body, bytes.
    pub request_body_bytes: u64,
    /// `requests_ok + requests_failed`.
    pub requests_total: u64,
    /// 2xx answers (that contained the `--expect` string, if any).
    pub requests_ok: u64,
    /// Non-2xx answers, transport errors and `--expect` mismatches.
    pub requests_failed: u64,
    /// Answers per HTTP status code.
    pub status_counts: BTreeMap<u16, u64>,
    /// Failed requests without a usable answer, by kind (plus
    /// `expect_mismatch`).
    pub errors: BTreeMap<ErrorKind, u64>,
    /// The first error message seen for each kind.
    pub error_examples: BTreeMap<ErrorKind, String>,
    /// `requests_ok / duration_s`.
    pub rps: f64,
    /// Latency of successful requests.
    pub latency_us: LatencySummary,
    /// Bytes written to sockets (HTTP heads and bodies).
    pub bytes_sent: u64,
    /// Bytes read from sockets (HTTP heads and bodies).
    pub bytes_received: u64,
    /// Open-loop figures; `None` in the closed loop.
    pub open_loop: Option<OpenLoopReport>,
    /// The server's CPU and memory (`--server-pid`); `None` without it.
    pub server: Option<ServerUsage>,
}

/// The server process's usage over the measured run (`--server-pid`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServerUsage {
    /// The server's process id.
    pub pid: u32,
    /// User CPU time over the measured run (warm-up excluded), s.
    pub cpu_user_s: f64,
    /// System CPU time over the measured run, s.
    pub cpu_system_s: f64,
    /// `(cpu_user_s + cpu_system_s) / requests_total`, in µs; `None` when no
    /// request was measured. Its resolution is one clock tick over the run.
    pub cpu_us_per_request: Option<f64>,
    /// The server's resident set size (VmRSS) after the run, bytes.
    pub rss_bytes_after: u64,
    /// Clock ticks per second the CPU times were counted in.
    pub clk_tck: u64,
    /// True when `getconf CLK_TCK` failed and 100 was assumed.
    pub clk_tck_assumed: bool,
}

impl ServerUsage {
    /// The usage between the CPU readings `before` and `after`, with the RSS
    /// read now.
    pub(crate) fn measure(
        watched: &WatchedProcess,
        before: CpuTicks,
        after: CpuTicks,
        requests: u64,
    ) -> Result<Self, BenchError> {
        let ticks = watched.ticks;
        let user = ticks.duration(after.user.saturating_sub(before.user));
        let system = ticks.duration(after.system.saturating_sub(before.system));
        let total_us = (user + system).as_secs_f64() * 1e6;
        Ok(ServerUsage {
            pid: watched.pid,
            cpu_user_s: user.as_secs_f64(),
            cpu_system_s: system.as_secs_f64(),
            cpu_us_per_request: (requests > 0).then(|| total_us / requests as f64),
            rss_bytes_after: watched.rss_bytes()?,
            clk_tck: ticks.per_second,
            clk_tck_assumed: ticks.assumed,
        })
    }
}

/// What [`Report::build`] needs to know about the run.
#[derive(Debug)]
pub(crate) struct RunInfo<'a> {
    pub(crate) mode: Pacing,
    pub(crate) url: &'a str,
    pub(crate) connections: usize,
    pub(crate) rate: Option<f64>,
    pub(crate) warmup: Duration,
    pub(crate) plan: &'a RunPlan,
    pub(crate) stats: &'a Stats,
    pub(crate) schedule: Option<&'a crate::http::Schedule>,
    pub(crate) late_threshold: Duration,
}

impl Report {
    pub(crate) fn build(run: &RunInfo<'_>) -> Self {
        let RunInfo { plan, stats, .. } = run;
        let now = Instant::now();
        let last = stats.last_finished.unwrap_or(now);
        // A run stopped by the clock lasted at least its duration; one
        // stopped by --requests lasted until its last answer.
        let measure_end = if now >= plan.end {
            last.max(plan.end)
        } else {
            last
        };
        let duration_s = measure_end
            .saturating_duration_since(plan.warmup_end)
            .as_secs_f64();
        let per_second = |n: u64| {
            if duration_s > 0.0 {
                n as f64 / duration_s
            } else {
                0.0
            }
        };
        let requests_total = stats.ok + stats.failed;
        let errors = ErrorKind::ALL
            .iter()
            .filter(|k| stats.errors[k.index()] > 0)
            .map(|k| (*k, stats.errors[k.index()]))
            .collect();
        let open_loop = run.schedule.map(|s| {
            let window = run.rate.map_or(0.0, |rate| s.scheduled as f64 / rate);
            let sending = stats.last_sent.map_or(0.0, |t| {
                t.saturating_duration_since(plan.warmup_end).as_secs_f64()
            });
            let sending = window.max(sending);
            OpenLoopReport {
                scheduled: s.scheduled,
                sent_late: stats.sent_late,
                late_threshold_us: micros(run.late_threshold),
                max_send_delay_us: micros(stats.max_send_delay),
                send_delay_us: LatencySummary::from_histogram(&stats.send_delay),
                dropped_by_generator: s.dropped,
                backlog_capacity: s.capacity as u64,
                achieved_rate: if sending > 0.0 {
                    requests_total as f64 / sending
                } else {
                    0.0
                },
            }
        });
        Self {
            mode: run.mode,
            url: run.url.to_owned(),
            connections: run.connections,
            rate: run.rate,
            warmup_s: run.warmup.as_secs_f64(),
            duration_s,
            request_body_bytes: plan.request.body_len() as u64,
            requests_total,
            requests_ok: stats.ok,
            requests_failed: stats.failed,
            status_counts: stats.status.clone(),
            errors,
            error_examples: stats.error_examples.clone(),
            rps: per_second(stats.ok),
            latency_us: LatencySummary::from_histogram(&stats.latency),
            bytes_sent: stats.bytes_sent,
            bytes_received: stats.bytes_received,
            open_loop,
            server: None,
        }
    }
}

fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

/// Writes `report` as pretty-printed JSON to `path`, creating its parent
/// directory if needed.
pub fn write_json(report: &Report, path: &Path) -> Result<(), BenchError> {
    let err = |source| BenchError::WriteJson {
        path: path.to_owned(),
        source,
    };
    if let Some(parent) = path.parent()
        && !parent.as_os_str().is_empty()
    {
        std::fs::create_dir_all(parent).map_err(err)?;
    }
    let mut json = serde_json::to_vec_pretty(report).map_err(|e| err(e.into()))?;
    json.push(b'\n');
    std::fs::write(path, json).map_err(err)
}

/// Prints a human-readable summary of `report` to stdout.
pub fn print_report(report: &Report) {
    print!("{}", render(report));
}

fn render(r: &Report) -> String {
    use std::fmt::Write as _;

    let mut s = String::new();
    let mode = match r.mode {
        Pacing::Closed => "closed loop".to_owned(),
        Pacing::Open => format!("open loop at {} req/s", r.rate.unwrap_or(0.0)),
    };
    // Writing to a String cannot fail.
    let _ = writeln!(s, "{} — {mode}, {} connections", r.url, r.connections);
    let _ = writeln!(
        s,
        "  duration   {:.2} s measured (warm-up {:.2} s), request body {} B",
        r.duration_s, r.warmup_s, r.request_body_bytes
    );
    let _ = writeln!(
        s,
        "  requests   {} ok, {} failed ({} total)",
        r.requests_ok, r.requests_failed, r.requests_total
    );
    let _ = writeln!(s, "  throughput {:.1} req/s", r.rps);
    let l = &r.latency_us;
    let _ = writeln!(
        s,
        "  latency    p50 {}  p90 {}  p99 {}  p99.9 {}  max {}",
        fmt_us(l.p50),
        fmt_us(l.p90),
        fmt_us(l.p99),
        fmt_us(l.p999),
        fmt_us(l.max)
    );
    let _ = writeln!(
        s,
        "             min {}  mean {}  stdev {}",
        fmt_us(l.min),
        fmt_us_f(l.mean),
        fmt_us_f(l.stdev)
    );
    let _ = writeln!(
        s,
        "  transfer   {} sent, {} received",
        fmt_bytes(r.bytes_sent),
        fmt_bytes(r.bytes_received)
    );
    if !r.status_counts.is_empty() {
        let codes: Vec<String> = r
            .status_counts
            .iter()
            .map(|(code, n)| format!("{code}: {n}"))
            .collect();
        let _ = writeln!(s, "  status     {}", codes.join(", "));
    }
    for (kind, n) in &r.errors {
        let example = r.error_examples.get(kind).map_or("", String::as_str);
        let _ = writeln!(s, "  error      {}: {n} (e.g. {example})", kind.as_str());
    }
    if let Some(u) = &r.server {
        let per_request = u
            .cpu_us_per_request
            .map_or_else(|| "-".to_owned(), |us| format!("{us:.1} µs/request"));
        let assumed = if u.clk_tck_assumed {
            " (CLK_TCK assumed 100)"
        } else {
            ""
        };
        let _ = writeln!(
            s,
            "  server     pid {}: CPU {per_request} (user {:.2} s, system {:.2} s){assumed}, RSS after {}",
            u.pid,
            u.cpu_user_s,
            u.cpu_system_s,
            fmt_bytes(u.rss_bytes_after)
        );
    }
    if let Some(o) = &r.open_loop {
        let _ = writeln!(
            s,
            "  open loop  {} scheduled, achieved {:.1} req/s, {} sent late (> {}), max send delay {}",
            o.scheduled,
            o.achieved_rate,
            o.sent_late,
            fmt_us(o.late_threshold_us),
            fmt_us(o.max_send_delay_us)
        );
        let d = &o.send_delay_us;
        let _ = writeln!(
            s,
            "             send delay p50 {}  p90 {}  p99 {}  p99.9 {}",
            fmt_us(d.p50),
            fmt_us(d.p90),
            fmt_us(d.p99),
            fmt_us(d.p999)
        );
        if o.dropped_by_generator > 0 {
            let _ = writeln!(
                s,
                "  WARNING    {} requests dropped by the generator (backlog of {} full): \
                 the server cannot sustain the rate",
                o.dropped_by_generator, o.backlog_capacity
            );
        }
    }
    s
}

fn fmt_us(us: u64) -> String {
    fmt_us_f(us as f64)
}

fn fmt_us_f(us: f64) -> String {
    if us >= 1_000_000.0 {
        format!("{:.2}s", us / 1_000_000.0)
    } else if us >= 1_000.0 {
        format!("{:.2}ms", us / 1_000.0)
    } else {
        format!("{us:.0}µs")
    }
}

fn fmt_bytes(b: u64) -> String {
    const UNITS: [&str; 4] = ["B", "KiB", "MiB", "GiB"];
    let mut v = b as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{b} B")
    } else {
        format!("{v:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::LatencySummary;

    fn run(count: u64, mean: f64, stdev: f64, p50: u64) -> LatencySummary {
        LatencySummary {
            count,
            min: p50 / 2,
            mean,
            p50,
            p90: p50 * 2,
            p99: p50 * 3,
            p999: p50 * 4,
            max: p50 * 5,
            stdev,
        }
    }

    #[test]
    fn combined_runs_pool_the_samples_and_take_the_median_percentile() {
        // Two samples at 10 and two at 30 (sd 0 each): all four have mean 20, sd 10.
        let combined = LatencySummary::combine(&[
            run(2, 10.0, 0.0, 10),
            run(2, 30.0, 0.0, 30),
            run(0, 0.0, 0.0, 0),
            run(2, 20.0, 0.0, 20),
        ]);
        assert_eq!(combined.count, 6);
        assert!((combined.mean - 20.0).abs() < 1e-9);
        assert!((combined.stdev - (200.0f64 / 3.0).sqrt()).abs() < 1e-9);
        assert_eq!((combined.p50, combined.p99), (20, 60));
        assert_eq!((combined.min, combined.max), (5, 150));
        assert_eq!(LatencySummary::combine(&[]), LatencySummary::default());
    }
}
