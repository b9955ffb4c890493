//! The `lather-bench` command: load generators, the abuse replay and the handler-stage,
//! remote-stage and eventing experiments. Kept apart from the `lather` server binary, which
//! does not link any of it.

mod logging;

use clap::{Parser, Subcommand};
use lather_bench::{BenchError, experiments};
use std::process::ExitCode;

/// lather-bench — load generators and benchmarks for lather.
#[derive(Debug, Parser)]
#[command(name = "lather-bench", version, about, long_about = None)]
struct Cli {
    /// Log filter, e.g. `info` or `lather_http=debug` (overrides RUST_LOG).
    #[arg(long, global = true, value_name = "FILTER")]
    log_level: Option<String>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// HTTP load: closed loop (N connections) or open loop (fixed rate).
    Http(Box<lather_bench::HttpBenchArgs>),
    /// The 16-point timing breakdown of SOAP echo calls to each URL (server points from
    /// `Server-Timing` where sent), side by side.
    Timing(lather_bench::timing::TimingArgs),
    /// Replay hostile cases against a lather server on loopback (RSS, CPU, probe latency).
    Abuse(Box<lather_bench::abuse::AbuseArgs>),
    /// Five handlers in six stage layouts, from one chain to one parallel stage (mean, sd,
    /// speedup, ideal).
    StageLayouts(experiments::StageLayoutsArgs),
    /// A stateful WSRF resource update and a notification, as two stages vs one parallel
    /// stage.
    ResourceNotify(experiments::ResourceNotifyArgs),
    /// Response time against offered rate: sequential stages, one parallel stage, an
    /// unregulated chain (where each one's knee is).
    RateKnee(experiments::RateKneeArgs),
    /// What context-expand costs a message once its context is cached (and cold).
    ContextLookup(experiments::ContextLookupArgs),
    /// The request rate SHA-256 alone allows for N digest handlers on these cores.
    DigestBound(experiments::DigestBoundArgs),
    /// Eventing delivery: latency tables for three bindings, a rate sweep, max throughput.
    Eventing(experiments::EventingArgs),
    /// One subscriber process of `lather-bench eventing` (started by it).
    #[command(hide = true)]
    EventingSink(experiments::EventingSinkArgs),
    /// One remote handler call against the same handler in process, split into its parts.
    RemoteCall(experiments::RemoteCallArgs),
    /// Price-sensitive clients against a service whose QoS offer follows its load (or
    /// not): offered and served load, price, CPU and p99 over time.
    QosAdaptive(Box<experiments::QosAdaptiveArgs>),
    /// A TCP proxy holding each chunk N µs in each direction (a link delay without netem).
    #[command(hide = true)]
    DelayProxy(lather_bench::delay_proxy::DelayProxyArgs),
    /// NATS PING/PONG round trips over one TCP connection.
    #[command(hide = true)]
    NatsRtt(lather_bench::nats_rtt::NatsRttArgs),
    /// A bare NATS responder answering each request with its payload (started by
    /// remote-call, in a process of its own).
    #[command(hide = true)]
    NatsEcho(lather_bench::nats_echo::NatsEchoArgs),
    /// A bare hyper HTTP/1.1 server answering each request with its body (no SOAP): the
    /// floor under lather's echo.
    BareEcho(lather_bench::bare_echo::BareEchoArgs),
}

fn run(command: Command) -> Result<(), BenchError> {
    match command {
        Command::Http(args) => lather_bench::run_http_bench_blocking(&args)
            .map(|report| lather_bench::print_report(&report)),
        Command::Abuse(args) => lather_bench::abuse::run(&args),
        Command::Timing(args) => lather_bench::timing::run(&args),
        Command::StageLayouts(args) => experiments::stage_layouts(&args),
        Command::ResourceNotify(args) => experiments::resource_notify(&args),
        Command::RateKnee(args) => experiments::rate_knee(&args),
        Command::DigestBound(args) => experiments::digest_bound(&args),
        Command::ContextLookup(args) => experiments::context_lookup(&args),
        Command::Eventing(args) => experiments::eventing(&args),
        Command::EventingSink(args) => experiments::eventing_sink(&args),
        Command::RemoteCall(args) => experiments::remote_call(&args),
        Command::QosAdaptive(args) => experiments::qos_adaptive(&args),
        Command::DelayProxy(args) => lather_bench::delay_proxy::run(&args),
        Command::NatsRtt(args) => lather_bench::nats_rtt::run(&args),
        Command::NatsEcho(args) => lather_bench::nats_echo::run(&args),
        Command::BareEcho(args) => lather_bench::bare_echo::run(&args),
    }
}

/// The process's allocator: mimalloc. glibc's gave the buffers of each large message back
/// to the system and faulted them in again for the next one (the chain of five handlers
/// on an 830 KB message: 8.2–9.2 ms against 5.9–6.6 ms; `docs/bench/history/2026-11-28-efficiency.md`,
/// section 10).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    // As `lather` does: the benchmark's servers, sinks and workers run without huge pages.
    lather_http::huge_pages::refuse();
    let cli = Cli::parse();
    logging::init(cli.log_level.as_deref());
    match run(cli.command) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            let mut message = format!("error: {e}");
            let mut source = std::error::Error::source(&e);
            while let Some(cause) = source {
                let cause_text = cause.to_string();
                if !message.contains(&cause_text) {
                    message.push_str(": ");
                    message.push_str(&cause_text);
                }
                source = cause.source();
            }
            eprintln!("{message}");
            ExitCode::from(2)
        }
    }
}
