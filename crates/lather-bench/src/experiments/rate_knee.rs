//! Rate knee (the Distributed Handler Architecture paper's Figure 10): response time
//! against offered rate (open loop) for logging, monitor and format-convert in three
//! deployments — sequential stages, one parallel stage (both behind
//! lather's admission queue and adaptive in-flight window), and an unregulated sequential
//! chain (no queue bound, no window) — to find each one's knee.
//!
//! Latency counts from each request's scheduled send time (coordinated-omission correct)
//! and covers answered requests; refused ones (503 Server busy) are counted apart.

use super::chart::{self, Line};
use super::drive::open_loop;
use super::files::{Scratch, out_dir};
use super::server::InProcess;
use super::{cores, ms, publish};
use crate::{BenchError, Report};
use std::fmt::Write as _;
use std::path::PathBuf;

/// Arguments of `lather-bench rate-knee`.
#[derive(Debug, Clone, clap::Args)]
pub struct RateKneeArgs {
    /// Offered rates in requests/s, ascending
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "250,500,1000,1500,2000,2500,3000,3500,4000,5000,6000"
    )]
    pub rates: Vec<f64>,
    /// Measured seconds per rate (after 1 s of warm-up)
    #[arg(long, default_value_t = 5.0)]
    pub duration: f64,
    /// Quote elements in the request (the body format-convert rewrites)
    #[arg(long, default_value_t = 200)]
    pub items: usize,
    /// Generator connections: more than the regulated server admits (its window plus
    /// `--queue`), so that the excess meets admission instead of waiting in the generator
    #[arg(long, default_value_t = 512)]
    pub connections: usize,
    /// Admission queue of the regulated deployments (`queue_capacity`)
    #[arg(long, default_value_t = 64)]
    pub queue: usize,
    /// The handler that logs each message: `logging` (a log line per message) or
    /// `audit-file` (each message stored in a file, no fsync by default)
    #[arg(long, value_enum, default_value_t = Logger::Logging)]
    pub logger: Logger,
    /// `fsync` of the `audit-file` logger: `never`, `always`, or an interval like `100ms`
    #[arg(long, default_value = "never")]
    pub fsync: String,
    /// Directory for the table and chart
    #[arg(long, default_value = "docs/bench")]
    pub out: PathBuf,
}

/// Which handler plays the paper's Logger.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Logger {
    /// `logging`: one structured log line per message.
    Logging,
    /// `audit-file`: each message appended to a file (fsync never).
    AuditFile,
}

const OLD: &str = "urn:lather:quotes:v1";
const NEW: &str = "urn:lather:quotes:v2";

fn request(items: usize) -> String {
    let mut body = format!(r#"<q:getQuotes xmlns:q="{OLD}">"#);
    for i in 0..items {
        let _ = write!(
            body,
            r#"<q:quote q:id="{i}"><q:symbol>SYM{i}</q:symbol><q:price>{}.{:02}</q:price></q:quote>"#,
            100 + i,
            i % 100
        );
    }
    body.push_str("</q:getQuotes>");
    format!(
        r#"<?xml version="1.0" encoding="UTF-8"?><soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Body>{body}</soap:Body></soap:Envelope>"#
    )
}

/// The three deployments: name, flow, regulated (admission queue and adaptive window).
const DEPLOYMENTS: [(&str, &str, bool); 3] = [
    (
        "sequential stages",
        r#"[["log"], ["monitor"], ["convert"]]"#,
        true,
    ),
    (
        "one parallel stage",
        r#"[["log", "monitor", "convert"]]"#,
        true,
    ),
    (
        "unregulated chain",
        r#"[["log"], ["monitor"], ["convert"]]"#,
        false,
    ),
];

/// One rate's figures.
struct Point {
    rate: f64,
    report: Report,
}

impl Point {
    fn refused(&self) -> u64 {
        self.report.status_counts.get(&503).copied().unwrap_or(0)
    }
    fn achieved(&self) -> f64 {
        self.report.rps
    }
}

/// Runs the experiment.
pub fn run(args: &RateKneeArgs) -> Result<(), BenchError> {
    out_dir(&args.out)?;
    if args.rates.is_empty() || args.rates.iter().any(|r| !(r.is_finite() && *r > 0.0)) {
        return Err(BenchError::InvalidArgument(
            "--rates must be positive numbers".into(),
        ));
    }
    let scratch = Scratch::new("rate-knee")?;
    let body = scratch.write("request.xml", request(args.items).as_bytes())?;
    let mapping = scratch.write(
        "quotes.map",
        format!("# v1 clients reach the v2 service\nnamespace {OLD} = {NEW}\nelement {{{OLD}}}getQuotes = {{{NEW}}}GetQuotes\n").as_bytes(),
    )?;
    let mut results: Vec<(&str, Vec<Point>)> = Vec::new();
    let logger = match args.logger {
        Logger::Logging => "kind = \"logging\"".to_owned(),
        Logger::AuditFile => format!(
            "kind = \"audit-file\"\npath = \"{}\"\nfsync = \"{}\"",
            scratch.path("messages.log").display(),
            args.fsync
        ),
    };
    for (name, flow, regulated) in DEPLOYMENTS {
        let admission = if regulated {
            format!("queue_capacity = {}\nmax_in_flight = \"auto\"", args.queue)
        } else {
            "queue_capacity = 1000000\nmax_in_flight = 1000000".to_owned()
        };
        let toml = format!(
            r#"[server]
listen = "127.0.0.1:0"
{admission}

[handlers.log]
{logger}
snapshot = true

[handlers.monitor]
kind = "monitor"
snapshot = true

[handlers.convert]
kind = "format-convert"
mapping_file = "{}"

[[service]]
name = "quotes"
path = "/quotes"
builtin = "echo"
request = {flow}
"#,
            mapping.display()
        );
        let server = InProcess::start(&toml, cores())?;
        let url = server.url("/quotes");
        let mut points = Vec::new();
        for &rate in &args.rates {
            eprintln!("rate knee: {name} at {rate} requests/s");
            let report = open_loop(&url, &body, rate, args.duration, args.connections)?;
            points.push(Point { rate, report });
        }
        drop(server);
        results.push((name, points));
    }
    let logger_name = match args.logger {
        Logger::Logging => "logging",
        Logger::AuditFile => "audit-file",
    };
    let name = match args.logger {
        Logger::AuditFile => format!("rate-knee-{logger_name}-fsync-{}", args.fsync),
        Logger::Logging => format!("rate-knee-{logger_name}"),
    };
    let mut md = String::new();
    let _ = writeln!(
        md,
        "#### Rate knee — {logger_name}, monitor, format-convert ({} quote elements) against offered rate ({} cores, {} s per rate, {} connections, regulated queue {})\n",
        args.items,
        cores(),
        args.duration,
        args.connections,
        args.queue
    );
    let _ = writeln!(
        md,
        "| offered (req/s) | {} |\n|---:|{}",
        results
            .iter()
            .map(|(n, _)| format!("{n}: answered/s, p50 / p99 ms, 503s"))
            .collect::<Vec<_>>()
            .join(" | "),
        "---|".repeat(results.len())
    );
    for (i, rate) in args.rates.iter().enumerate() {
        let cells: Vec<String> = results
            .iter()
            .map(|(_, points)| {
                let p = &points[i];
                format!(
                    "{:.0}, {:.2} / {:.2}, {}",
                    p.achieved(),
                    ms(p.report.latency_us.p50 as f64),
                    ms(p.report.latency_us.p99 as f64),
                    p.refused()
                )
            })
            .collect();
        let _ = writeln!(md, "| {rate:.0} | {} |", cells.join(" | "));
    }
    let _ = writeln!(md);
    for (name, points) in &results {
        let _ = writeln!(md, "- {name}: knee {}", knee(points));
    }
    if let [(_, seq), (_, par), _] = results.as_slice() {
        let gains: Vec<String> = seq
            .iter()
            .zip(par)
            .map(|(s, p)| {
                let (a, b) = (
                    s.report.latency_us.p50 as f64,
                    p.report.latency_us.p50 as f64,
                );
                format!("{:.0}: {:+.0}%", s.rate, 100.0 * (a - b) / a)
            })
            .collect();
        let _ = writeln!(md, "- parallel gain in p50 per rate: {}", gains.join(", "));
    }
    let lines: Vec<Line> = results
        .iter()
        .flat_map(|(name, points)| {
            [("p50", 0), ("p99", 1)].map(|(q, which)| Line {
                name: format!("{name} {q}"),
                points: points
                    .iter()
                    .filter(|p| p.report.requests_ok > 0)
                    .map(|p| {
                        let l = &p.report.latency_us;
                        (p.rate, ms(if which == 0 { l.p50 } else { l.p99 } as f64))
                    })
                    .collect(),
            })
        })
        .collect();
    chart::lines(
        &args.out.join(format!("{name}.svg")),
        &format!(
            "Rate knee — {logger_name}, monitor, format-convert: response time vs offered rate"
        ),
        "offered rate (requests/s)",
        "response time (ms, log scale)",
        &lines,
        true,
    )?;
    let _ = writeln!(md, "\n![{name}](bench/{name}.svg)\n");
    publish(&args.out, &name, &md)
}

/// The first rate where the deployment stops keeping up: answered below 95% of offered,
/// p50 over three times the lowest rate's, or more than 1% refused.
fn knee(points: &[Point]) -> String {
    let Some(first) = points.first() else {
        return "—".into();
    };
    let base = first.report.latency_us.p50.max(1) as f64;
    for p in points {
        let total = p.report.requests_total.max(1) as f64;
        let behind = p.achieved() < 0.95 * p.rate;
        let slow = p.report.latency_us.p50 as f64 > 3.0 * base;
        let refusing = p.refused() as f64 > 0.01 * total;
        if behind || slow || refusing {
            let why: Vec<&str> = [
                (behind, "answers < 95% of offered"),
                (slow, "p50 > 3× the lowest rate's"),
                (refusing, "> 1% refused"),
            ]
            .iter()
            .filter(|(b, _)| *b)
            .map(|(_, w)| *w)
            .collect();
            return format!("at {:.0} requests/s ({})", p.rate, why.join(", "));
        }
    }
    format!(
        "not reached up to {:.0} requests/s",
        points.last().map_or(0.0, |p| p.rate)
    )
}
