//! Stand-alone runner of the HTTP load generator, with the same flags as
//! `lather bench http`:
//!
//! ```text
//! cargo run --release -p lather-bench --example bench-http -- \
//!     http://127.0.0.1:18080/echo --connections 32 --duration 5
//! ```

use std::process::ExitCode;

use clap::Parser;
use lather_bench::{HttpBenchArgs, print_report, run_http_bench_blocking};

/// HTTP/SOAP load generator (closed loop, or open loop with --rate).
#[derive(Debug, Parser)]
#[command(name = "bench-http")]
struct Cli {
    #[command(flatten)]
    args: HttpBenchArgs,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run_http_bench_blocking(&cli.args) {
        Ok(report) => {
            print_report(&report);
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("error: {err}");
            ExitCode::FAILURE
        }
    }
}
