//! The `lather` command: `serve`, `worker`, `check`, `subscribe`, `bench`.

mod check;
mod logging;
mod serve;
mod subscribe;
mod worker;

use clap::{Parser, Subcommand};
use lather_bench::experiments;
use std::path::PathBuf;
use std::process::ExitCode;

/// lather — SOAP/XML web-services engine and gateway.
#[derive(Debug, Parser)]
#[command(name = "lather", version, about, long_about = None)]
struct Cli {
    /// Log filter, e.g. `info` or `lather_http=debug` (overrides RUST_LOG).
    #[arg(long, global = true, value_name = "FILTER")]
    log_level: Option<String>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve the services of a configuration until SIGINT or SIGTERM.
    Serve {
        /// The configuration file (TOML).
        #[arg(long, short)]
        config: PathBuf,
    },
    /// Host remote handlers (`placement = "remote"`) for other processes, through the
    /// configuration's [nats] server, until SIGINT or SIGTERM.
    Worker {
        /// The configuration file (TOML).
        #[arg(long, short)]
        config: PathBuf,
        /// Comma-separated handler names to host (default: every remote handler).
        #[arg(long, value_name = "A,B")]
        handlers: Option<String>,
        /// Requests handled at once; up to 8 × N are taken from NATS (each acknowledged at once), more wait there for this or another worker.
        #[arg(long, value_name = "N", default_value_t = lather_remote::worker::DEFAULT_CONCURRENCY)]
        concurrency: usize,
    },
    /// Validate a configuration and print its services.
    Check {
        /// The configuration file (TOML).
        #[arg(long, short)]
        config: PathBuf,
    },
    /// Subscribe to a remote WS-Eventing source and print each notification's body (one
    /// line each) until N arrived, Ctrl-C or the timeout; then unsubscribe.
    Subscribe(Box<subscribe::SubscribeArgs>),
    /// Load generators and benchmarks.
    Bench {
        #[command(subcommand)]
        which: BenchCommand,
    },
}

#[derive(Debug, Subcommand)]
enum BenchCommand {
    /// HTTP load: closed loop (N connections) or open loop (fixed rate).
    Http(Box<lather_bench::HttpBenchArgs>),
    /// Replay hostile cases against a lather server on loopback (RSS, CPU, probe latency).
    Abuse(Box<lather_bench::abuse::AbuseArgs>),
    /// Figure 3: five handlers in six stage configurations (mean, sd, speedup, eq. 5 ideal).
    Figure3(experiments::Figure3Args),
    /// Table 1: wsrf-resource and notify, sequential vs parallel.
    Table1(experiments::Table1Args),
    /// Figure 10: response time vs offered rate — sequential, parallel, unregulated.
    Figure10(experiments::Figure10Args),
    /// The request rate SHA-256 alone allows for N digest handlers on these cores.
    DigestBound(experiments::DigestBoundArgs),
    /// Eventing: seed 001's tables for three bindings, a rate sweep, max throughput.
    Eventing(experiments::EventingArgs),
    /// One subscriber process of `bench eventing` (started by it).
    #[command(hide = true)]
    EventingSink(experiments::EventingSinkArgs),
    /// One remote handler call against the same handler in process, split as equation 1.
    RemoteCall(experiments::RemoteCallArgs),
    /// A TCP proxy holding each chunk N µs in each direction (a link delay without netem).
    #[command(hide = true)]
    DelayProxy(lather_bench::delay_proxy::DelayProxyArgs),
    /// NATS PING/PONG round trips over one TCP connection.
    #[command(hide = true)]
    NatsRtt(lather_bench::nats_rtt::NatsRttArgs),
}

fn bench(which: BenchCommand) -> Result<(), lather_bench::BenchError> {
    match which {
        BenchCommand::Http(args) => lather_bench::run_http_bench_blocking(&args)
            .map(|report| lather_bench::print_report(&report)),
        BenchCommand::Abuse(args) => lather_bench::abuse::run(&args),
        BenchCommand::Figure3(args) => experiments::figure3(&args),
        BenchCommand::Table1(args) => experiments::table1(&args),
        BenchCommand::Figure10(args) => experiments::figure10(&args),
        BenchCommand::DigestBound(args) => experiments::digest_bound(&args),
        BenchCommand::Eventing(args) => experiments::eventing(&args),
        BenchCommand::EventingSink(args) => experiments::eventing_sink(&args),
        BenchCommand::RemoteCall(args) => experiments::remote_call(&args),
        BenchCommand::DelayProxy(args) => lather_bench::delay_proxy::run(&args),
        BenchCommand::NatsRtt(args) => lather_bench::nats_rtt::run(&args),
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    logging::init(cli.log_level.as_deref());
    let result = match cli.command {
        Command::Serve { config } => serve::run(&config),
        Command::Check { config } => check::run(&config),
        Command::Subscribe(args) => subscribe::run(&args),
        Command::Worker {
            config,
            handlers,
            concurrency,
        } => worker::run(&config, handlers.as_deref(), concurrency),
        Command::Bench { which } => bench(which).map_err(anyhow::Error::from),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}
