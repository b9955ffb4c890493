//! `lather-bench abuse`: replays the severe hostile cases of issue 10
//! against a running lather server on loopback, and reports for each the
//! server's RSS (before, sampled peak, after), its CPU time, the latency of
//! a normal echo request made every ~20 ms meanwhile, and whether the
//! hostile input got the expected treatment.
//!
//! Each case's expectation is a small `expected` function in its module
//! (in `cases`); besides it, every case expects the probe to have been
//! answered throughout (`met`).

mod cases;
mod client;
mod measure;
mod messages;
mod probe;
mod sink;

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use self::cases::{CaseVerdict, Ctx};
use self::measure::{Row, RssSampler};
use self::probe::{Probe, ProbeStats};
use crate::error::BenchError;
use crate::procfs::WatchedProcess;

/// Each probe must be answered within this.
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// Arguments of `lather-bench abuse`.
#[derive(Debug, Clone, clap::Args)]
pub struct AbuseArgs {
    /// The server, on loopback only: http://127.0.0.1:PORT
    #[arg(long, value_name = "URL")]
    pub target: String,

    /// The server's process id (its RSS and CPU time are read in /proc)
    #[arg(long, value_name = "PID")]
    pub server_pid: u32,

    /// The CI form: smaller counts and shorter runs, no RSS bounds
    #[arg(long)]
    pub quick: bool,

    /// Run only these cases (letters a–h, comma-separated)
    #[arg(long, value_name = "a,b,…", value_delimiter = ',')]
    pub cases: Vec<char>,

    /// Also write the table (markdown) to this file
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<PathBuf>,

    /// Path of the echo service (the probe's)
    #[arg(long, default_value = "/echo")]
    pub echo_path: String,

    /// Path of the `max_in_flight = 1` service with a 10 ms `sleep` handler
    #[arg(long, default_value = "/slow")]
    pub slow_path: String,

    /// Name of that service (its /metrics label)
    #[arg(long, default_value = "slow")]
    pub slow_service: String,

    /// Path of the event source
    #[arg(long, default_value = "/events")]
    pub events_path: String,

    /// Path of the service with the `wsse-username` handler
    #[arg(long, default_value = "/secure")]
    pub secure_path: String,

    /// A user in that handler's users file
    #[arg(long, default_value = "abuse")]
    pub user: String,

    /// Its password
    #[arg(long, default_value = "abuse-password")]
    pub password: String,
}

/// The cases, by letter, in the order they run: the XPath bomb last, since
/// a server without its fix stays busy for minutes after it and would spoil
/// the figures of every later case.
const CASES: [(char, &str); 8] = [
    ('a', "slot leak"),
    ('c', "mustUnderstand amplification"),
    ('d', "SSRF"),
    ('e', "big event fan-out"),
    ('f', "slow bodies"),
    ('g', "idle connections"),
    ('h', "nonce flood"),
    ('b', "XPath filter bomb"),
];

/// Runs the cases on a runtime of its own, prints the table, writes it to
/// `--markdown` when set; fails with [`BenchError::AbuseExpectations`] when
/// a case's expectation was not met.
pub fn run(args: &AbuseArgs) -> Result<(), BenchError> {
    let addr = loopback_target(&args.target)?;
    for c in &args.cases {
        if !CASES.iter().any(|(l, _)| l == c) {
            return Err(BenchError::InvalidArgument(format!(
                "--cases: no case {c:?} (a to h)"
            )));
        }
    }
    let watched = WatchedProcess::new(args.server_pid)?;
    let ctx = Ctx {
        addr,
        quick: args.quick,
        echo: args.echo_path.clone(),
        slow: args.slow_path.clone(),
        slow_service: args.slow_service.clone(),
        events: args.events_path.clone(),
        secure: args.secure_path.clone(),
        user: args.user.clone(),
        password: args.password.clone(),
        watched,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(BenchError::Runtime)?;
    let mut rows = Vec::new();
    for (letter, name) in CASES {
        if !args.cases.is_empty() && !args.cases.contains(&letter) {
            continue;
        }
        eprintln!("abuse: case {letter} ({name})…");
        let row = runtime.block_on(measured(&ctx, watched, letter, name))?;
        eprintln!(
            "abuse: case {letter}: {} — {}",
            if row.met { "met" } else { "NOT MET" },
            row.note
        );
        rows.push(row);
    }
    let table = measure::table(&rows);
    let form = if args.quick { "quick" } else { "full" };
    let text = format!(
        "lather-bench abuse ({form} form) against {} (pid {})\n\n{table}",
        args.target, args.server_pid
    );
    println!("{text}");
    if let Some(path) = &args.markdown {
        let err = |source| BenchError::WriteJson {
            path: path.clone(),
            source,
        };
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(err)?;
        }
        std::fs::write(path, text).map_err(err)?;
    }
    let failed = rows.iter().filter(|r| !r.met).count();
    if failed > 0 {
        return Err(BenchError::AbuseExpectations {
            failed,
            total: rows.len(),
        });
    }
    Ok(())
}

/// Runs one case with the RSS sampler and the probe around it.
async fn measured(
    ctx: &Ctx,
    watched: WatchedProcess,
    letter: char,
    name: &str,
) -> Result<Row, BenchError> {
    let rss_before = watched.rss_bytes()?;
    let cpu_before = watched.cpu()?;
    let sampler = RssSampler::start(watched, rss_before);
    let probe = Probe::start(ctx.addr, ctx.echo.clone(), PROBE_TIMEOUT);
    let limit = Duration::from_secs(ctx.pick(120, 600));
    let verdict = match tokio::time::timeout(limit, run_case(ctx, letter)).await {
        Ok(v) => v,
        Err(_) => CaseVerdict::new(false, format!("the case did not end within {limit:?}")),
    };
    let probe = probe.finish().await;
    let rss_peak = sampler.finish();
    let rss_after = watched.rss_bytes()?;
    let cpu = watched.used(cpu_before, watched.cpu()?);
    let base = verdict.rss_baseline.unwrap_or(rss_before);
    let rss_ok = ctx.quick
        || verdict
            .rss_growth_bound
            .is_none_or(|bound| rss_peak.saturating_sub(base) <= bound);
    let mut note = verdict.note;
    if !rss_ok {
        note.push_str("; RSS grew beyond its bound");
    }
    if let Some(f) = &probe.first_failure {
        note.push_str(&format!("; probe failed, e.g. {f}"));
    }
    Ok(Row {
        case: format!("{letter} {name}"),
        met: met(verdict.met, rss_ok, &probe),
        note,
        rss_before,
        rss_peak: rss_peak.max(rss_after),
        rss_after,
        cpu,
        probe,
    })
}

/// A case's expectation holds when its own check passed, its RSS stayed
/// within its bound (full form) and the probe was answered every time.
pub(crate) fn met(case: bool, rss_ok: bool, probe: &ProbeStats) -> bool {
    case && rss_ok && probe.failures == 0 && probe.ok > 0
}

async fn run_case(ctx: &Ctx, letter: char) -> CaseVerdict {
    match letter {
        'a' => cases::slot_leak::run(ctx).await,
        'b' => cases::xpath_bomb::run(ctx).await,
        'c' => cases::must_understand::run(ctx).await,
        'd' => cases::ssrf::run(ctx).await,
        'e' => cases::fan_out::run(ctx).await,
        'f' => cases::slow_bodies::run(ctx).await,
        'g' => cases::idle::run(ctx).await,
        _ => cases::nonce::run(ctx).await,
    }
}

/// The address of `http://HOST:PORT[/]` when HOST is a loopback address.
fn loopback_target(url: &str) -> Result<SocketAddr, BenchError> {
    let bad = |reason: &str| BenchError::InvalidUrl {
        url: url.to_owned(),
        reason: reason.to_owned(),
    };
    let rest = url
        .strip_prefix("http://")
        .ok_or_else(|| bad("not http://"))?;
    let authority = rest.trim_end_matches('/');
    let (host, port) = authority.rsplit_once(':').ok_or_else(|| bad("no :PORT"))?;
    let port: u16 = port.parse().map_err(|_| bad("bad port"))?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let ip: IpAddr = if host == "localhost" {
        IpAddr::from([127, 0, 0, 1])
    } else {
        host.parse()
            .map_err(|_| bad("the host must be a loopback IP address"))?
    };
    if !ip.is_loopback() {
        return Err(bad("the abuse bench runs against loopback only"));
    }
    Ok(SocketAddr::new(ip, port))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_targets_are_accepted() {
        assert_eq!(
            loopback_target("http://127.0.0.1:8080").unwrap(),
            "127.0.0.1:8080".parse().unwrap()
        );
        assert!(loopback_target("http://[::1]:9/").is_ok());
        assert!(loopback_target("http://localhost:9").is_ok());
        assert!(loopback_target("http://10.0.0.1:8080").is_err());
        assert!(loopback_target("http://example.com:80").is_err());
        assert!(loopback_target("https://127.0.0.1:8080").is_err());
        assert!(loopback_target("http://127.0.0.1").is_err());
    }

    #[test]
    fn a_case_fails_when_the_probe_failed() {
        let answered = ProbeStats {
            ok: 10,
            ..ProbeStats::default()
        };
        assert!(met(true, true, &answered));
        assert!(!met(false, true, &answered));
        assert!(!met(true, false, &answered));
        let failed = ProbeStats {
            failures: 1,
            ..answered.clone()
        };
        assert!(!met(true, true, &failed));
    }
}
