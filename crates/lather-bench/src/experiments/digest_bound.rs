//! What SHA-256 alone allows: the request rate at which `handlers` digests of `rounds`
//! rounds each would use every core fully, with nothing else to do. The ceiling a
//! `digest` stage can approach; the CXF comparison reports lather against it.

use crate::BenchError;
use crate::http::SoapVersionArg;
use crate::request::soap_echo_body;
use sha2::{Digest as _, Sha256};
use std::hint::black_box;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Arguments of `lather-bench digest-bound`.
#[derive(Debug, Clone, clap::Args)]
pub struct DigestBoundArgs {
    /// SHA-256 rounds per handler (as the `digest` handler's `rounds`)
    #[arg(long, default_value_t = 100)]
    pub rounds: u32,
    /// Digest handlers per request
    #[arg(long, default_value_t = 5)]
    pub handlers: u32,
    /// Hash this file (the request body) instead of the built-in SOAP 1.1 echo request
    #[arg(long, value_name = "FILE")]
    pub body: Option<PathBuf>,
    /// Size of the text inside the built-in request (as `lather-bench http`)
    #[arg(long, value_name = "N", default_value_t = 100)]
    pub payload_bytes: usize,
    /// Threads hashing at once (default: one per core)
    #[arg(long)]
    pub threads: Option<usize>,
    /// Seconds to hash
    #[arg(long, default_value_t = 5.0)]
    pub seconds: f64,
}

/// Hashes on every thread for the given time and prints the bound.
pub fn run(args: &DigestBoundArgs) -> Result<(), BenchError> {
    let body = match &args.body {
        Some(path) => std::fs::read(path).map_err(|source| BenchError::ReadBody {
            path: path.clone(),
            source,
        })?,
        None => soap_echo_body(SoapVersionArg::V11, args.payload_bytes).to_vec(),
    };
    if !(args.seconds.is_finite() && args.seconds > 0.0) || args.rounds == 0 || args.handlers == 0 {
        return Err(BenchError::InvalidArgument(
            "--seconds, --rounds and --handlers must be positive".into(),
        ));
    }
    let threads = args.threads.unwrap_or_else(super::cores).max(1);
    let span = Duration::from_secs_f64(args.seconds);
    let started = Instant::now();
    let hashes: u64 = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                let body = &body;
                scope.spawn(move || {
                    let mut count = 0u64;
                    while started.elapsed() < span {
                        for _ in 0..64 {
                            black_box(Sha256::digest(black_box(body)));
                        }
                        count += 64;
                    }
                    count
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap_or(0)).sum()
    });
    let secs = started.elapsed().as_secs_f64();
    let per_second = hashes as f64 / secs;
    let per_request = f64::from(args.rounds) * f64::from(args.handlers);
    println!(
        "digest bound: {} threads hashed a {}-byte request {:.0} times/s ({:.2} µs per hash per thread)",
        threads,
        body.len(),
        per_second,
        1e6 * threads as f64 / per_second
    );
    println!(
        "  {} handlers × {} rounds = {} hashes per request → at most {:.1} requests/s on {} threads",
        args.handlers,
        args.rounds,
        per_request,
        per_second / per_request,
        threads
    );
    Ok(())
}
