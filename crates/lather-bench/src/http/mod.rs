//! `lather-bench http`: arguments and the run driver.

mod closed;
pub(crate) mod conn;
mod counting;
mod exchange;
mod open;
pub(crate) mod progress;
pub(crate) mod report;
pub(crate) mod stats;
pub(crate) use self::open::Schedule;
pub(crate) mod finished;
pub(crate) mod plan;
pub(crate) mod target;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tokio::task::JoinSet;

use self::conn::Conn;
pub use self::finished::ErrorKind;
use self::plan::RunPlan;
use self::progress::ProgressDisplay;
use self::report::{Pacing, Report, RunInfo, ServerUsage, write_json};
use self::target::TargetUrl;
use crate::error::BenchError;
use crate::procfs::{CpuTicks, ProcError, WatchedProcess};
pub use crate::request::SoapVersionArg;
use crate::request::{RequestSpec, RequestTemplate};

/// Arguments of `lather-bench http`.
///
/// Without `--rate` the run is a closed loop (each connection sends its next
/// request when the previous answer is in); with `--rate` it is an open loop
/// whose latencies count from each request's scheduled send time.
#[derive(Debug, Clone, clap::Args)]
pub struct HttpBenchArgs {
    /// TargetUrl URL (http:// only), e.g. http://127.0.0.1:18080/echo
    pub url: String,

    /// Number of keep-alive connections (virtual clients)
    #[arg(long, default_value_t = 32)]
    pub connections: usize,

    /// Measured run time in seconds, after the warm-up
    #[arg(long, value_name = "SECS", default_value_t = 10.0)]
    pub duration: f64,

    /// Stop after this many measured requests (or at the end of the
    /// duration, whichever comes first)
    #[arg(long, value_name = "N")]
    pub requests: Option<u64>,

    /// Warm-up in seconds; results during the warm-up are discarded
    #[arg(long, value_name = "SECS", default_value_t = 0.0)]
    pub warmup: f64,

    /// Open loop: send this many requests per second in total
    #[arg(long, value_name = "R")]
    pub rate: Option<f64>,

    /// Send this file as the raw request body instead of the built-in SOAP
    /// echo request (the SOAP headers of --soap still apply)
    #[arg(long, value_name = "FILE")]
    pub body: Option<PathBuf>,

    /// SOAP version of the built-in request and its default headers
    #[arg(long, value_enum, default_value_t = SoapVersionArg::V11)]
    pub soap: SoapVersionArg,

    /// Size of the text inside the built-in request's operation element
    #[arg(long, value_name = "N", default_value_t = 100)]
    pub payload_bytes: usize,

    /// Extra header 'Name: value' (repeatable; replaces a default header of
    /// the same name)
    #[arg(long = "header", value_name = "NAME: VALUE")]
    pub headers: Vec<String>,

    /// Override the Content-Type header
    #[arg(long, value_name = "TYPE")]
    pub content_type: Option<String>,

    /// Count a 2xx answer whose body lacks this string as an error
    #[arg(long, value_name = "STRING")]
    pub expect: Option<String>,

    /// Write the report as JSON to this file
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,

    /// Tokio worker threads for the generator (1 = a current-thread runtime)
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub threads: usize,

    /// Per-request timeout in milliseconds; a timed-out request is an error
    /// and its connection is re-established
    #[arg(long, value_name = "MS", default_value_t = 10_000)]
    pub timeout_ms: u64,

    /// Do not show the progress bar
    #[arg(long)]
    pub quiet: bool,

    /// Report this process's CPU time per request (user + system, all
    /// threads, from /proc/PID/stat over the measured run, warm-up excluded)
    /// and its resident memory after the run: the server's PID
    #[arg(long, value_name = "PID")]
    pub server_pid: Option<u32>,

    /// Make each request's body unique: every occurrence of MARK in the body is
    /// replaced by as many hexadecimal digits drawn from the request's sequence
    /// number, all changing from one request to the next (repeatable), e.g. the
    /// UUID of a wsa:MessageID
    #[arg(long = "vary", value_name = "MARK")]
    pub vary: Vec<String>,

    /// With --vary: only this many of every 100 requests get fresh marks, the others
    /// repeat one body, so a cache in front of the server misses about this often
    #[arg(long, value_name = "P", default_value_t = 100)]
    pub unique_percent: u8,
}

/// Validated timing options.
#[derive(Debug)]
struct Timing {
    duration: Duration,
    warmup: Duration,
    timeout: Duration,
}

impl HttpBenchArgs {
    fn validate(&self) -> Result<Timing, BenchError> {
        let bad = |msg: String| Err(BenchError::InvalidArgument(msg));
        if self.connections == 0 {
            return bad("--connections must be at least 1".into());
        }
        if self.unique_percent > 100 {
            return bad("--unique-percent must be 0 to 100".into());
        }
        if self.unique_percent < 100 && self.vary.is_empty() {
            return bad("--unique-percent needs --vary MARK (what makes a request unique)".into());
        }
        if self.threads == 0 {
            return bad("--threads must be at least 1".into());
        }
        if self.timeout_ms == 0 {
            return bad("--timeout-ms must be at least 1".into());
        }
        if self.requests == Some(0) {
            return bad("--requests must be at least 1".into());
        }
        if let Some(rate) = self.rate
            && !(rate.is_finite() && rate > 0.0)
        {
            return bad(format!("--rate must be a positive number, not {rate}"));
        }
        let secs = |name: &str, v: f64, allow_zero: bool| {
            let ok = v.is_finite() && (v > 0.0 || (allow_zero && v == 0.0));
            Duration::try_from_secs_f64(v)
                .ok()
                .filter(|_| ok)
                .ok_or_else(|| BenchError::InvalidArgument(format!("invalid {name} {v}")))
        };
        Ok(Timing {
            duration: secs("--duration", self.duration, false)?,
            warmup: secs("--warmup", self.warmup, true)?,
            timeout: Duration::from_millis(self.timeout_ms),
        })
    }
}

/// Builds the runtime the generator should run on: a current-thread runtime
/// for `--threads 1`, else a multi-thread runtime with that many workers.
pub fn build_runtime(args: &HttpBenchArgs) -> Result<tokio::runtime::Runtime, BenchError> {
    let mut builder = if args.threads <= 1 {
        tokio::runtime::Builder::new_current_thread()
    } else {
        let mut b = tokio::runtime::Builder::new_multi_thread();
        b.worker_threads(args.threads);
        b
    };
    builder.enable_all().build().map_err(BenchError::Runtime)
}

/// Builds a runtime with [`build_runtime`] and runs [`run_http_bench`] on it.
pub fn run_http_bench_blocking(args: &HttpBenchArgs) -> Result<Report, BenchError> {
    build_runtime(args)?.block_on(run_http_bench(args))
}

/// Runs the benchmark described by `args` and returns its report; writes
/// the report to `args.json` as well when set.
///
/// The connections are opened before the clock starts. When the duration
/// ends no new request is sent, and those in flight (or queued, in the open
/// loop) are allowed to finish within `--timeout-ms`. Failed requests do not
/// make this fail: they are counted in the report.
///
/// `args.threads` is not read here; run this on a runtime from
/// [`build_runtime`] (or use [`run_http_bench_blocking`]).
pub async fn run_http_bench(args: &HttpBenchArgs) -> Result<Report, BenchError> {
    let timing = args.validate()?;
    let target = TargetUrl::parse(&args.url)?;
    let body = match &args.body {
        Some(path) => Some(Bytes::from(std::fs::read(path).map_err(|source| {
            BenchError::ReadBody {
                path: path.clone(),
                source,
            }
        })?)),
        None => None,
    };
    let request = RequestTemplate::new(&RequestSpec {
        authority: &target.authority,
        path: target.path.clone(),
        soap: args.soap,
        body,
        payload_bytes: args.payload_bytes,
        content_type: args.content_type.as_deref(),
        headers: &args.headers,
        vary: &args.vary,
    })?
    .with_unique_percent(args.unique_percent);
    let addr = target.resolve().await?;
    let watched = args.server_pid.map(WatchedProcess::new).transpose()?;
    let conns = preconnect(addr, args.connections, timing.timeout).await?;

    let plan = Arc::new(RunPlan::new(
        addr,
        request,
        args.expect.as_deref(),
        timing.timeout,
        timing.warmup,
        timing.duration,
        args.requests,
    ));
    let progress = ProgressDisplay::start(&plan, args.quiet);
    let cpu_at_warmup_end = watched.map(|w| sample_cpu_at(w, plan.warmup_end));
    let result = match args.rate {
        None => closed::run(&plan, conns).await.map(|s| (s, None)),
        Some(rate) => open::run(&plan, rate, conns)
            .await
            .map(|(s, sched)| (s, Some(sched))),
    };
    progress.finish();
    let (stats, schedule) = result?;
    let cpu_after = watched.map(|w| w.cpu()).transpose()?;

    let mut report = Report::build(&RunInfo {
        mode: if args.rate.is_some() {
            Pacing::Open
        } else {
            Pacing::Closed
        },
        url: &args.url,
        connections: args.connections,
        rate: args.rate,
        warmup: timing.warmup,
        plan: &plan,
        stats: &stats,
        schedule: schedule.as_ref(),
        late_threshold: open::LATE_THRESHOLD,
    });
    if let (Some(w), Some(before), Some(after)) = (watched, cpu_at_warmup_end, cpu_after) {
        let before = before
            .await
            .map_err(|e| BenchError::Task(e.to_string()))??;
        report.server = Some(ServerUsage::measure(
            &w,
            before,
            after,
            report.requests_total,
        )?);
    }
    if let Some(path) = &args.json {
        write_json(&report, path)?;
    }
    Ok(report)
}

/// Reads `watched`'s CPU time at `at` (the end of the warm-up), on a task of
/// its own so that the run is not disturbed.
fn sample_cpu_at(
    watched: WatchedProcess,
    at: tokio::time::Instant,
) -> tokio::task::JoinHandle<Result<CpuTicks, ProcError>> {
    tokio::spawn(async move {
        tokio::time::sleep_until(at).await;
        watched.cpu()
    })
}

/// Opens `n` connections concurrently; those that fail are retried (and
/// counted) by their client once the run has started.
async fn preconnect(
    addr: std::net::SocketAddr,
    n: usize,
    timeout: Duration,
) -> Result<Vec<Option<Conn>>, BenchError> {
    let mut set = JoinSet::new();
    for _ in 0..n {
        set.spawn(async move {
            tokio::time::timeout(timeout, Conn::connect(addr))
                .await
                .ok()
                .and_then(Result::ok)
        });
    }
    let mut conns = Vec::with_capacity(n);
    while let Some(joined) = set.join_next().await {
        conns.push(joined.map_err(|e| BenchError::Task(e.to_string()))?);
    }
    Ok(conns)
}
