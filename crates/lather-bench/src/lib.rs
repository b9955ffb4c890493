//! lather-bench: lather's HTTP load generator.
//!
//! The generator drives one keep-alive HTTP/1.1 connection per virtual
//! client (hyper 1 `client::conn::http1` over `tokio::net::TcpStream`) in
//! either of two modes:
//!
//! - **closed loop** (default): every connection sends its next request as
//!   soon as the previous answer has been read completely;
//! - **open loop** (`--rate R`): requests are scheduled at fixed intervals
//!   independently of the answers, and latency is measured from each
//!   request's *scheduled* send time (coordinated-omission correct).
//!
//! Latencies go to one HDR histogram per connection (microseconds), merged
//! into a [`Report`] at the end.
//!
//! The `lather-bench` binary mounts [`HttpBenchArgs`] as `lather-bench http`, builds a tokio
//! runtime with [`HttpBenchArgs::threads`] worker threads (see
//! [`build_runtime`]) and runs [`run_http_bench`] on it, then prints the
//! result with [`print_report`].

pub mod abuse;
pub mod bare_echo;
pub mod delay_proxy;
mod error;
pub mod experiments;
mod http;
pub mod nats_echo;
pub mod nats_rtt;
pub mod procfs;
mod request;
pub mod timing;

pub use error::BenchError;
pub use http::report::{
    LatencySummary, OpenLoopReport, Pacing, Report, ServerUsage, print_report, write_json,
};
pub use http::{
    ErrorKind, HttpBenchArgs, SoapVersionArg, build_runtime, run_http_bench,
    run_http_bench_blocking,
};
