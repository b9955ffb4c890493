//! End-to-end tests of the HTTP load generator against an in-process hyper
//! server on 127.0.0.1:0.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use clap::Parser;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use lather_bench::{ErrorKind, HttpBenchArgs, Pacing, Report, run_http_bench};
use lather_test_util::ScratchDir;
use tokio::net::TcpListener;

const ANSWER: &[u8] = b"<soap:Envelope><soap:Body><ns:echoResponse><result>x</result>\
</ns:echoResponse></soap:Body></soap:Envelope>";

/// Upper bound for any run in these tests: they must finish, not be fast.
const MUST_FINISH_WITHIN: Duration = Duration::from_secs(30);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Behaviour {
    /// 200 to everything.
    Ok,
    /// 500 to every third request (counted over all connections).
    Every3rd500,
    /// 200 with `Connection: close`, then close.
    Close,
    /// Never answer.
    Hang,
}

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

/// Starts a server; returns its address and the count of requests it read.
async fn server(behaviour: Behaviour) -> (SocketAddr, Arc<AtomicU64>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let count = Arc::new(AtomicU64::new(0));
    let counter = Arc::clone(&count);
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let counter = Arc::clone(&counter);
            tokio::spawn(async move {
                let service = service_fn(move |req: Request<Incoming>| {
                    let counter = Arc::clone(&counter);
                    async move {
                        let _ = req.into_body().collect().await;
                        let n = counter.fetch_add(1, Ordering::SeqCst) + 1;
                        if behaviour == Behaviour::Hang {
                            tokio::time::sleep(Duration::from_secs(3600)).await;
                        }
                        let status = if behaviour == Behaviour::Every3rd500 && n.is_multiple_of(3) {
                            500
                        } else {
                            200
                        };
                        Ok::<_, Infallible>(
                            Response::builder()
                                .status(status)
                                .header("content-type", "text/xml; charset=utf-8")
                                .body(Full::new(Bytes::from_static(ANSWER)))
                                .unwrap(),
                        )
                    }
                });
                let mut builder = http1::Builder::new();
                builder.keep_alive(behaviour != Behaviour::Close);
                let _ = builder
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    (addr, count)
}

async fn run(args: &HttpBenchArgs) -> Report {
    tokio::time::timeout(MUST_FINISH_WITHIN, run_http_bench(args))
        .await
        .expect("the run finishes")
        .expect("the run succeeds")
}

fn url(addr: SocketAddr) -> String {
    format!("http://{addr}/echo")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closed_loop_sends_exactly_the_requested_number() {
    let (addr, served) = server(Behaviour::Ok).await;
    let report = run(&args(
        &url(addr),
        &["--requests", "300", "--connections", "8"],
    ))
    .await;
    assert_eq!(report.mode, Pacing::Closed);
    assert_eq!(report.requests_ok, 300);
    assert_eq!(report.requests_failed, 0);
    assert_eq!(report.requests_total, 300);
    assert_eq!(report.status_counts.get(&200), Some(&300));
    assert!(report.errors.is_empty(), "{:?}", report.error_examples);
    assert_eq!(report.latency_us.count, 300);
    assert!(report.latency_us.min <= report.latency_us.p50);
    assert!(report.latency_us.p50 <= report.latency_us.max);
    assert!(report.bytes_sent >= 300 * report.request_body_bytes);
    assert!(report.bytes_received >= 300 * ANSWER.len() as u64);
    assert!(report.rps > 0.0);
    assert_eq!(served.load(Ordering::SeqCst), 300);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn non_2xx_answers_are_counted_by_status() {
    let (addr, _) = server(Behaviour::Every3rd500).await;
    let report = run(&args(&url(addr), &["--requests", "300"])).await;
    assert_eq!(report.status_counts.get(&500), Some(&100));
    assert_eq!(report.status_counts.get(&200), Some(&200));
    assert_eq!(report.requests_ok, 200);
    assert_eq!(report.requests_failed, 100);
    assert!(report.errors.is_empty(), "{:?}", report.error_examples);
    assert_eq!(report.latency_us.count, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_closed_by_the_server_are_reestablished() {
    let (addr, served) = server(Behaviour::Close).await;
    let report = run(&args(
        &url(addr),
        &["--requests", "300", "--connections", "4"],
    ))
    .await;
    assert_eq!(report.requests_ok, 300, "{:?}", report.error_examples);
    assert_eq!(report.requests_failed, 0);
    assert_eq!(served.load(Ordering::SeqCst), 300);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_connections_are_counted_and_the_run_ends() {
    let addr = {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        listener.local_addr().unwrap()
    };
    let report = run(&args(
        &url(addr),
        &["--duration", "0.5", "--connections", "4"],
    ))
    .await;
    assert_eq!(report.requests_ok, 0);
    let connect = report.errors.get(&ErrorKind::Connect).copied().unwrap_or(0);
    assert!(connect > 0, "{report:?}");
    assert_eq!(report.requests_failed, connect);
    assert!(report.error_examples.contains_key(&ErrorKind::Connect));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_connections_in_the_open_loop_end_too() {
    let addr = {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        listener.local_addr().unwrap()
    };
    let report = run(&args(&url(addr), &["--duration", "0.5", "--rate", "100"])).await;
    assert_eq!(report.requests_ok, 0);
    assert!(report.errors.get(&ErrorKind::Connect).copied().unwrap_or(0) > 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_loop_sends_at_the_requested_rate() {
    let (addr, _) = server(Behaviour::Ok).await;
    let report = run(&args(
        &url(addr),
        &["--rate", "200", "--duration", "1", "--connections", "8"],
    ))
    .await;
    assert_eq!(report.mode, Pacing::Open);
    assert!(
        (199..=201).contains(&report.requests_total),
        "sent {}",
        report.requests_total
    );
    assert_eq!(report.requests_failed, 0, "{:?}", report.error_examples);
    let open = report.open_loop.expect("open-loop figures");
    assert!(
        (199..=201).contains(&open.scheduled),
        "scheduled {}",
        open.scheduled
    );
    assert_eq!(open.dropped_by_generator, 0);
}

/// Every request of an open-loop run has its send delay (scheduled time to the moment a
/// connection takes it up) in the report. How small the delays are is a figure for the
/// benchmarks; the pacer's schedule itself is tested in `http::open`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_loop_reports_a_send_delay_for_every_request() {
    let (addr, _) = server(Behaviour::Ok).await;
    let report = run(&args(
        &url(addr),
        &["--rate", "1250", "--duration", "1", "--connections", "8"],
    ))
    .await;
    assert_eq!(report.requests_failed, 0, "{:?}", report.error_examples);
    let open = report.open_loop.expect("open-loop figures");
    assert!(report.requests_total > 0);
    assert_eq!(open.send_delay_us.count, report.requests_total);
    assert!(open.send_delay_us.p50 <= open.send_delay_us.max);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_loop_honours_the_request_budget() {
    let (addr, served) = server(Behaviour::Ok).await;
    let report = run(&args(
        &url(addr),
        &["--rate", "1000", "--duration", "10", "--requests", "50"],
    ))
    .await;
    assert_eq!(report.requests_ok, 50);
    assert_eq!(served.load(Ordering::SeqCst), 50);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expect_mismatches_are_errors() {
    let (addr, _) = server(Behaviour::Ok).await;
    let report = run(&args(
        &url(addr),
        &["--requests", "50", "--expect", "not in the answer"],
    ))
    .await;
    assert_eq!(report.requests_ok, 0);
    assert_eq!(report.requests_failed, 50);
    assert_eq!(report.errors.get(&ErrorKind::ExpectMismatch), Some(&50));
    assert_eq!(report.status_counts.get(&200), Some(&50));

    let report = run(&args(
        &url(addr),
        &["--requests", "50", "--expect", "echoResponse"],
    ))
    .await;
    assert_eq!(report.requests_ok, 50);
    assert_eq!(report.requests_failed, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timed_out_requests_are_errors() {
    let (addr, _) = server(Behaviour::Hang).await;
    let report = run(&args(
        &url(addr),
        &[
            "--duration",
            "0.5",
            "--connections",
            "2",
            "--timeout-ms",
            "100",
        ],
    ))
    .await;
    assert_eq!(report.requests_ok, 0);
    assert!(report.errors.get(&ErrorKind::Timeout).copied().unwrap_or(0) >= 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn warmup_requests_are_not_counted() {
    let (addr, served) = server(Behaviour::Ok).await;
    let report = run(&args(
        &url(addr),
        &[
            "--warmup",
            "0.3",
            "--duration",
            "10",
            "--requests",
            "20",
            "--connections",
            "2",
        ],
    ))
    .await;
    assert_eq!(report.requests_ok, 20);
    assert!(served.load(Ordering::SeqCst) > 20);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_report_is_written() {
    let (addr, _) = server(Behaviour::Ok).await;
    let dir = ScratchDir::new("bench");
    // In a directory that does not exist yet: the report makes it.
    let path = dir.join("reports").join("report.json");
    let path_str = path.to_str().unwrap().to_owned();
    let report = run(&args(
        &url(addr),
        &["--requests", "10", "--json", &path_str],
    ))
    .await;
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    assert_eq!(json["requests_ok"], 10);
    assert_eq!(json["mode"], "closed");
    assert_eq!(json["status_counts"]["200"], 10);
    assert_eq!(json["latency_us"]["count"], report.latency_us.count);
    assert!(json["rate"].is_null());
}

#[tokio::test]
async fn invalid_arguments_are_rejected() {
    for (url, extra) in [
        ("https://127.0.0.1:1/", &[][..]),
        ("http://127.0.0.1:1/", &["--connections", "0"][..]),
        ("http://127.0.0.1:1/", &["--duration", "0"][..]),
        ("http://127.0.0.1:1/", &["--rate", "0"][..]),
        ("http://127.0.0.1:1/", &["--header", "no colon"][..]),
        (
            "http://127.0.0.1:1/",
            &["--body", "/nonexistent/body.xml"][..],
        ),
    ] {
        assert!(
            run_http_bench(&args(url, extra)).await.is_err(),
            "{url} {extra:?}"
        );
    }
}
