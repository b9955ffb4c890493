//! Load for the experiments, through the same generator as `lather-bench http`.

use crate::http::{HttpBenchArgs, SoapVersionArg, run_http_bench_blocking};
use crate::{BenchError, LatencySummary, Report};
use std::path::Path;

/// Base arguments: SOAP 1.1 (the experiment bodies are 1.1), quiet, the body from `body`.
fn args(url: &str, body: &Path) -> HttpBenchArgs {
    HttpBenchArgs {
        url: url.to_owned(),
        connections: 1,
        duration: 3600.0,
        requests: None,
        warmup: 0.0,
        rate: None,
        body: Some(body.to_path_buf()),
        soap: SoapVersionArg::V11,
        payload_bytes: 0,
        headers: Vec::new(),
        content_type: None,
        expect: None,
        json: None,
        threads: 1,
        timeout_ms: 30_000,
        quiet: true,
        server_pid: None,
        vary: Vec::new(),
        unique_percent: 100,
    }
}

/// One client, `requests` requests one after another after `warmup` seconds of the same:
/// the paper's "each observed N times". Every request must succeed.
pub(crate) fn sequential(
    url: &str,
    body: &Path,
    requests: u64,
    warmup: f64,
) -> Result<LatencySummary, BenchError> {
    let report = run_http_bench_blocking(&HttpBenchArgs {
        requests: Some(requests),
        warmup,
        ..args(url, body)
    })?;
    all_ok(url, &report)?;
    Ok(report.latency_us)
}

/// Open loop at `rate` requests/s for `duration` seconds over `connections` connections.
/// Refusals (503) are expected past the knee; the report counts them.
pub(crate) fn open_loop(
    url: &str,
    body: &Path,
    rate: f64,
    duration: f64,
    connections: usize,
) -> Result<Report, BenchError> {
    run_http_bench_blocking(&HttpBenchArgs {
        rate: Some(rate),
        duration,
        warmup: 1.0,
        connections,
        timeout_ms: 10_000,
        ..args(url, body)
    })
}

fn all_ok(url: &str, report: &Report) -> Result<(), BenchError> {
    if report.requests_failed > 0 || report.requests_ok == 0 {
        return Err(BenchError::Experiment(format!(
            "{url}: {} of {} requests failed (statuses {:?}); the experiment needs every answer",
            report.requests_failed, report.requests_total, report.status_counts
        )));
    }
    Ok(())
}
