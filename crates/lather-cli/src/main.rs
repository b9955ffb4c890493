//! The `lather` command: `serve`, `reload`, `worker`, `check`, `subscribe`, `relay`, `qos`.
//! The load generators and benchmarks are the separate `lather-bench` binary; `lather bench
//! timing` exists only when built with the `bench` feature (off by default). Exit codes:
//! see [`exit`].

mod check;
mod exit;
mod logging;
#[cfg(feature = "otel")]
mod otel;
mod qos;
mod relay;
mod reload;
mod serve;
mod subscribe;
mod worker;

use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

/// lather — SOAP/XML web-services engine and gateway.
#[derive(Debug, Parser)]
#[command(name = "lather", version, about, long_about = None)]
struct Cli {
    /// Log filter, e.g. `info` or `lather_http=debug` (overrides RUST_LOG).
    #[arg(long, global = true, value_name = "FILTER")]
    log_level: Option<String>,
    /// Log line format: `text` for people, `json` for log collectors (one object a line).
    #[arg(
        long,
        global = true,
        value_enum,
        env = "LATHER_LOG_FORMAT",
        default_value_t = logging::LogFormat::Text
    )]
    log_format: logging::LogFormat,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve the services of a configuration until SIGINT or SIGTERM; SIGHUP (or `lather
    /// reload`) re-reads the configuration.
    Serve {
        /// The configuration file (TOML).
        #[arg(long, short)]
        config: PathBuf,
        /// Write the process id here while serving (for `lather reload`).
        #[arg(long, value_name = "FILE")]
        pid_file: Option<PathBuf>,
    },
    /// Ask a running `lather serve` to re-read its configuration: checks the file first
    /// (with --config), then signals the process in --pid-file.
    Reload {
        /// The pid file `lather serve --pid-file` writes.
        #[arg(long, value_name = "FILE")]
        pid_file: PathBuf,
        /// The configuration to check before signalling (nothing is signalled if it has errors).
        #[arg(long, short)]
        config: Option<PathBuf>,
    },
    /// Host remote handlers (`placement = "remote"`) for other processes, through the
    /// configuration's `[nats]` server, until SIGINT or SIGTERM.
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
    /// Relay SOAP traffic to a server, showing each exchange (and recording it with
    /// --record) until SIGINT or SIGTERM; or send a recording again with --replay FILE URL.
    Relay(Box<relay::RelayArgs>),
    /// Measure a SOAP endpoint.
    #[cfg(feature = "bench")]
    #[command(subcommand)]
    Bench(BenchCommand),
    /// Ask a QoS broker for the offer that fits, or list its offers.
    #[command(subcommand)]
    Qos(qos::QosCommand),
}

/// `lather bench …`.
#[cfg(feature = "bench")]
#[derive(Debug, Subcommand)]
enum BenchCommand {
    /// The 16-point timing breakdown of echo calls to each URL: the client's points, the
    /// server's from its Server-Timing header (lather sends one when asked), side by side.
    Timing(lather_bench::timing::TimingArgs),
}

/// The process's allocator: mimalloc. glibc's gave the buffers of each large message back
/// to the system and faulted them in again for the next one (the chain of five handlers
/// on an 830 KB message: 8.2–9.2 ms against 5.9–6.6 ms; `docs/bench/history/2026-11-28-efficiency.md`,
/// section 10).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    // Before anything else faults memory in: no 2 MiB zeroing in the middle of traffic.
    lather_http::huge_pages::refuse();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // `--help` and `--version` are "errors" clap prints to stdout: they succeed.
            let code = if e.use_stderr() {
                exit::USAGE
            } else {
                exit::OK
            };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    let telemetry = match &cli.command {
        Command::Serve { config, .. } | Command::Worker { config, .. } => {
            logging::telemetry_of(config)
        }
        _ => None,
    };
    let _logging = logging::init(cli.log_level.as_deref(), cli.log_format, telemetry.as_ref());
    let result = match cli.command {
        Command::Serve { config, pid_file } => serve::run(&config, pid_file.as_deref()),
        Command::Reload { pid_file, config } => reload::run(&pid_file, config.as_deref()),
        Command::Check { config } => check::run(&config),
        Command::Subscribe(args) => subscribe::run(&args),
        Command::Relay(args) => relay::run(&args),
        Command::Qos(command) => qos::run(&command),
        #[cfg(feature = "bench")]
        Command::Bench(BenchCommand::Timing(args)) => {
            lather_bench::timing::run(&args).map_err(Into::into)
        }
        Command::Worker {
            config,
            handlers,
            concurrency,
        } => worker::run(&config, handlers.as_deref(), concurrency),
    };
    match result {
        Ok(()) => ExitCode::from(exit::OK),
        Err(e) => {
            exit::report(&e);
            ExitCode::from(exit::code_of(&e))
        }
    }
}
