//! `lather-bench timing URL…`: the seed's 16-point timing breakdown of a SOAP call, with the
//! client's points measured here and the server's read from its `Server-Timing` answer
//! header (lather sends one when asked with `Lather-Timing`); a server without it gets
//! the points a client can see and the rest inferred as one span.
//!
//! Each URL is called `--requests` times, one call after another on one keep-alive
//! connection, after `--warmup` calls; the table gives each span's mean, p50 and p99.

mod sample;
mod table;

use crate::error::BenchError;
use crate::http::SoapVersionArg;
use crate::http::target::TargetUrl;
use clap::Args;
pub use sample::Sample;

/// `lather-bench timing` arguments.
#[derive(Debug, Clone, Args)]
pub struct TimingArgs {
    /// The SOAP echo endpoints to time (lather, gSOAP, CXF…), each on its own
    #[arg(required = true, value_name = "URL")]
    pub urls: Vec<String>,

    /// Calls measured per URL
    #[arg(long, value_name = "N", default_value_t = 2000)]
    pub requests: usize,

    /// Calls made first and not measured
    #[arg(long, value_name = "N", default_value_t = 200)]
    pub warmup: usize,

    /// Size of the echoed text
    #[arg(long, value_name = "N", default_value_t = 100)]
    pub payload_bytes: usize,

    /// SOAP version of the request
    #[arg(long, value_enum, default_value_t = SoapVersionArg::V11)]
    pub soap: SoapVersionArg,
}

/// Times every URL of `args` and prints a table for each, then the comparison.
pub fn run(args: &TimingArgs) -> Result<(), BenchError> {
    if args.requests == 0 {
        return Err(BenchError::InvalidArgument(
            "--requests must be at least 1".into(),
        ));
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(BenchError::Runtime)?;
    let mut summaries = Vec::new();
    for url in &args.urls {
        let target = TargetUrl::parse(url)?;
        let samples = runtime.block_on(sample::collect(&target, args))?;
        let summary = table::Summary::of(url, &samples);
        summary.print();
        summaries.push(summary);
    }
    if summaries.len() > 1 {
        table::print_comparison(&summaries);
    }
    Ok(())
}
