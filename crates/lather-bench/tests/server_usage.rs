//! `lather-bench http --server-pid`: the server's CPU per request and RSS,
//! read from /proc, against a lather server on 127.0.0.1:0.
//!
//! The server runs in this test's process (its PID is the test's own), so
//! the CPU figure also holds the generator's share: the test checks that
//! the figures are present and sane, not their size.

use clap::Parser;
use lather_bench::{BenchError, HttpBenchArgs, run_http_bench};
use lather_test_util::ScratchDir;

#[derive(Debug, Parser)]
struct Cli {
    #[command(flatten)]
    args: HttpBenchArgs,
}

fn args(url: &str, extra: &[&str]) -> HttpBenchArgs {
    let argv = ["bench", url, "--quiet"]
        .into_iter()
        .chain(extra.iter().copied());
    Cli::try_parse_from(argv).expect("valid arguments").args
}

/// Starts a lather echo service on 127.0.0.1:0; returns its URL.
async fn lather_echo() -> String {
    let config = lather_config::Config::from_toml(
        "[server]\nlisten = \"127.0.0.1:0\"\n[[service]]\nname = \"echo\"\npath = \"/echo\"\nbuiltin = \"echo\"\n",
        "test",
    )
    .expect("valid configuration");
    let server = lather_http::Server::bind(&config).await.expect("bind");
    let url = format!("http://{}/echo", server.local_addr());
    tokio::spawn(server.serve(std::future::pending()));
    url
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cpu_per_request_and_rss_are_reported() {
    let url = lather_echo().await;
    let pid = std::process::id().to_string();
    let dir = ScratchDir::new("server-usage");
    // In a directory that does not exist yet: the report makes it.
    let json = dir.join("reports").join("report.json");
    let a = args(
        &url,
        &[
            "--requests",
            "3000",
            "--warmup",
            "0.2",
            "--connections",
            "4",
            "--server-pid",
            &pid,
            "--json",
            json.to_str().unwrap(),
        ],
    );
    let report = tokio::time::timeout(std::time::Duration::from_secs(120), run_http_bench(&a))
        .await
        .expect("the run ends")
        .expect("the run succeeds");
    assert_eq!(report.requests_failed, 0, "{report:?}");
    let usage = report.server.as_ref().expect("server usage reported");
    assert_eq!(usage.pid, std::process::id());
    let per_request = usage.cpu_us_per_request.expect("requests were measured");
    assert!(
        per_request.is_finite() && per_request > 0.0,
        "CPU per request {per_request}"
    );
    assert!(usage.cpu_user_s + usage.cpu_system_s > 0.0);
    assert!(usage.rss_bytes_after > 0);

    let written: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&json).expect("JSON report")).unwrap();
    let field = &written["server"]["cpu_us_per_request"];
    assert!(
        field.as_f64().is_some_and(|v| v.is_finite() && v > 0.0),
        "JSON server.cpu_us_per_request: {field}"
    );
    assert!(written["server"]["rss_bytes_after"].as_u64().unwrap() > 0);
}

#[tokio::test]
async fn a_server_pid_that_does_not_exist_is_an_error() {
    let url = lather_echo().await;
    // PIDs are below 2^22 on Linux.
    let a = args(&url, &["--requests", "1", "--server-pid", "4294967295"]);
    match run_http_bench(&a).await {
        Err(BenchError::Proc(e)) => assert!(e.to_string().contains("/proc/4294967295/stat"), "{e}"),
        other => panic!("expected a /proc error, got {other:?}"),
    }
}

#[tokio::test]
async fn without_server_pid_there_is_no_server_usage() {
    let url = lather_echo().await;
    let report = run_http_bench(&args(&url, &["--requests", "10"]))
        .await
        .unwrap();
    assert_eq!(report.requests_ok, 10);
    assert!(report.server.is_none());
}
