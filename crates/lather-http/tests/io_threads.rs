//! `Server::io_threads`: connections are accepted and served on several threads, each with
//! a runtime of its own, sharing one listening socket; every request is answered, and a
//! graceful shutdown drains the requests in flight on every thread before `serve` returns.

use crate::support;

use bytes::Bytes;
use lather_envelope::{EnvelopeBuilder, SoapVersion};
use lather_pipeline::{Reply, ServiceFuture, ServiceRequest, SoapService};
use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use support::*;

/// Answers after `pause`, noting the thread each request ran on.
#[derive(Clone)]
struct Noting {
    threads: Arc<Mutex<Vec<String>>>,
    pause: Duration,
}

impl SoapService for Noting {
    fn call<'a>(&'a self, request: ServiceRequest<'a>) -> ServiceFuture<'a> {
        Box::pin(async move {
            let name = std::thread::current().name().unwrap_or("").to_owned();
            self.threads.lock().unwrap().push(name);
            tokio::time::sleep(self.pause).await;
            let version = request.envelope.version();
            Ok(Reply::Written(
                version,
                EnvelopeBuilder::new(version)
                    .body(Bytes::from_static(b"<r:done xmlns:r=\"urn:r\"/>"))
                    .build(),
            ))
        })
    }
}

#[tokio::test]
async fn connections_are_served_on_every_io_thread_and_drained_at_shutdown() {
    let threads: Arc<Mutex<Vec<String>>> = Arc::default();
    let service = Noting {
        threads: threads.clone(),
        pause: Duration::from_millis(200),
    };
    let server = lather_http::Server::builder()
        .listen("127.0.0.1:0".parse().unwrap())
        .service("/n", service)
        .bind()
        .await
        .unwrap()
        .io_threads(3);
    let mut server = TestServer::serving(server);
    let addr = server.addr;

    // 48 connections at once, each a request held 200 ms: all answered.
    let body = envelope(SoapVersion::V12, "", "<m:x xmlns:m=\"urn:m\"/>");
    let calls: Vec<_> = (0..48)
        .map(|_| tokio::spawn(post(addr, "/n", SoapVersion::V12, body.clone())))
        .collect();
    for call in calls {
        let answer = call.await.unwrap();
        assert_eq!(answer.status, 200, "{}", answer.text());
    }
    let seen: BTreeSet<String> = threads.lock().unwrap().iter().cloned().collect();
    assert!(
        seen.iter().any(|name| name.starts_with("lather-io-")),
        "no request ran on an I/O thread: {seen:?}"
    );

    // Requests in flight when the shutdown starts are answered, on whichever thread.
    let in_flight: Vec<_> = (0..12)
        .map(|_| tokio::spawn(post(addr, "/n", SoapVersion::V12, body.clone())))
        .collect();
    while threads.lock().unwrap().len() < 48 + 12 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let serving = server.shutdown();
    for call in in_flight {
        assert_eq!(call.await.unwrap().status, 200);
    }
    tokio::time::timeout(Duration::from_secs(10), serving)
        .await
        .expect("serve returned")
        .unwrap()
        .unwrap();
    // Nothing accepts any more.
    assert!(tokio::net::TcpStream::connect(addr).await.is_err());
}

/// Answers with the CPUs its thread may run on and those a blocking task it starts may run
/// on: `<c:cpus xmlns:c="urn:c" here="0" blocking="0,1"/>`.
#[derive(Clone, Copy)]
struct Cpus;

fn listed(cpus: &[usize]) -> String {
    cpus.iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

impl SoapService for Cpus {
    fn call<'a>(&'a self, request: ServiceRequest<'a>) -> ServiceFuture<'a> {
        Box::pin(async move {
            let here = lather_pipeline::affinity::current_thread_cpus();
            let blocking =
                tokio::task::spawn_blocking(lather_pipeline::affinity::current_thread_cpus)
                    .await
                    .unwrap();
            let version = request.envelope.version();
            let body = format!(
                r#"<c:cpus xmlns:c="urn:c" here="{}" blocking="{}"/>"#,
                listed(&here),
                listed(&blocking)
            );
            Ok(Reply::Written(
                version,
                EnvelopeBuilder::new(version)
                    .body(Bytes::from(body))
                    .build(),
            ))
        })
    }
}

/// Serves `Cpus` with one I/O thread per CPU (pinned or not) and sends `calls` requests, each
/// on a connection of its own; returns each answer's `here` and `blocking` lists.
async fn cpus_seen(pin: bool, calls: usize) -> Vec<(String, String)> {
    let mut server = serve_cpus(pin).await;
    let addr = server.addr;
    let body = envelope(SoapVersion::V12, "", "<m:x xmlns:m=\"urn:m\"/>");
    let mut seen = Vec::new();
    for _ in 0..calls {
        let answer = post(addr, "/c", SoapVersion::V12, body.clone()).await;
        assert_eq!(answer.status, 200, "{}", answer.text());
        let text = answer.text();
        seen.push((attribute(text, "here"), attribute(text, "blocking")));
    }
    stop(&mut server).await;
    seen
}

/// The value of the first attribute `name` in `text`.
fn attribute(text: &str, name: &str) -> String {
    let start = text.find(&format!("{name}=\"")).unwrap() + name.len() + 2;
    let end = start + text[start..].find('"').unwrap();
    text[start..end].to_owned()
}

/// Serves `Cpus` at `/c` with one I/O thread per CPU, pinned or not.
async fn serve_cpus(pin: bool) -> TestServer {
    let server = lather_http::Server::builder()
        .listen("127.0.0.1:0".parse().unwrap())
        .service("/c", Cpus)
        .bind()
        .await
        .unwrap()
        .io_threads(lather_pipeline::affinity::process_cpus().len())
        .pin_io_threads(pin);
    TestServer::serving(server)
}

/// Stops `server`; its `serve` returns without error within 10 s.
async fn stop(server: &mut TestServer) {
    tokio::time::timeout(Duration::from_secs(10), server.shutdown())
        .await
        .expect("serve returned")
        .unwrap()
        .unwrap();
}

#[tokio::test]
async fn with_a_thread_per_cpu_each_runs_on_its_cpu_and_what_it_starts_on_every_cpu() {
    let cpus = lather_pipeline::affinity::process_cpus().to_vec();
    let all = listed(&cpus);
    for (here, blocking) in cpus_seen(true, 16).await {
        if cpus.len() > 1 {
            // Pinned: one CPU of the process's set.
            let cpu: usize = here
                .parse()
                .unwrap_or_else(|_| panic!("not one CPU: {here}"));
            assert!(cpus.contains(&cpu), "{cpu} not in {all}");
        } else {
            // One CPU: one I/O thread, never pinned.
            assert_eq!(here, all);
        }
        // A blocking task started there is not held to that CPU.
        assert_eq!(blocking, all);
    }
}

#[tokio::test]
async fn pin_io_threads_false_leaves_every_io_thread_on_every_cpu() {
    let all = listed(lather_pipeline::affinity::process_cpus());
    for (here, blocking) in cpus_seen(false, 16).await {
        assert_eq!(here, all);
        assert_eq!(blocking, all);
    }
}

#[tokio::test]
async fn the_count_of_moved_connections_is_exported_from_the_start() {
    let mut server = serve_cpus(true).await;
    let metrics = get(server.addr, "/metrics").await;
    let moved = metric(metrics.text(), "lather_connections_moved_total");
    assert_eq!(moved, Some(0.0), "{}", metrics.text());
    stop(&mut server).await;
}

/// `calls` requests to `Cpus` on one keep-alive connection; the `here` of each answer.
fn keep_alive_calls(stream: &mut std::net::TcpStream, calls: usize) -> Vec<String> {
    use std::io::{BufRead, BufReader, Read, Write};
    let body = envelope(SoapVersion::V12, "", "<m:x xmlns:m=\"urn:m\"/>");
    let request = format!(
        "POST /c HTTP/1.1\r\nhost: t\r\ncontent-type: application/soap+xml\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut seen = Vec::new();
    for _ in 0..calls {
        stream.write_all(request.as_bytes()).unwrap();
        let mut length = 0;
        loop {
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            if line == "\r\n" {
                break;
            }
            if let Some((name, value)) = line.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().unwrap();
            }
        }
        let mut answer = vec![0; length];
        reader.read_exact(&mut answer).unwrap();
        seen.push(attribute(&String::from_utf8(answer).unwrap(), "here"));
    }
    seen
}

/// Serves `Cpus` with one pinned I/O thread per CPU, moving connections as `[server]
/// roam_connections = configured` says, or as `set` says through
/// `Server::roam_connections`; a client thread on the first CPU, then on the second, sends
/// 48 requests from each on one connection. Returns the CPUs of the answering threads, from
/// each CPU, and the moves counted; `None` on a machine with one CPU (one I/O thread,
/// nowhere to move).
async fn client_on_two_cpus(
    configured: bool,
    set: Option<bool>,
) -> Option<(Vec<String>, Vec<String>, f64)> {
    let cpus = lather_pipeline::affinity::process_cpus().to_vec();
    if cpus.len() < 2 {
        return None;
    }
    // The `[server]` keys as a configuration gives them. Every CPU counts as having time to
    // spare and none as saturated, however busy the machine running the tests is: a
    // moving connection always follows, and is never shed.
    let settings = lather_config::ServerConfig {
        roam_connections: configured,
        roam_spare_idle_percent: 0,
        roam_saturated_idle_percent: 0,
        ..lather_config::ServerConfig::default()
    };
    let mut server = lather_http::Server::builder()
        .settings(settings)
        .listen("127.0.0.1:0".parse().unwrap())
        .service("/c", Cpus)
        .bind()
        .await
        .unwrap()
        .io_threads(cpus.len());
    if let Some(roam) = set {
        server = server.roam_connections(roam);
    }
    let mut server = TestServer::serving(server);
    let addr = server.addr;
    let (first, second) = (cpus[0], cpus[1]);
    let (on_first, on_second) = tokio::task::spawn_blocking(move || {
        let mut stream = std::net::TcpStream::connect(addr).unwrap();
        lather_pipeline::affinity::pin_current_thread(first).unwrap();
        let on_first = keep_alive_calls(&mut stream, 48);
        lather_pipeline::affinity::pin_current_thread(second).unwrap();
        let on_second = keep_alive_calls(&mut stream, 48);
        (on_first, on_second)
    })
    .await
    .unwrap();
    let metrics = get(addr, "/metrics").await;
    let moved = metric(metrics.text(), "lather_connections_moved_total")
        .unwrap_or_else(|| panic!("no moved counter in {}", metrics.text()));
    stop(&mut server).await;
    Some((on_first, on_second, moved))
}

/// The last eight of `answers`.
fn tail(answers: &[String]) -> Vec<String> {
    answers[answers.len() - 8..].to_vec()
}

#[tokio::test]
async fn a_connection_follows_its_client_to_the_io_thread_of_its_cpu() {
    // Turned off in the configuration, on again by the embedding program.
    let Some((on_first, on_second, moved)) = client_on_two_cpus(false, Some(true)).await else {
        return;
    };
    let cpus = lather_pipeline::affinity::process_cpus();
    // Within a few looks at the CPU (one every 16 reads), answers come from the
    // thread of the client's CPU.
    assert_eq!(
        tail(&on_first),
        vec![cpus[0].to_string(); 8],
        "{on_first:?}"
    );
    assert_eq!(
        tail(&on_second),
        vec![cpus[1].to_string(); 8],
        "{on_second:?}"
    );
    assert!(moved >= 1.0, "moved {moved}");
}

#[tokio::test]
async fn with_roam_connections_false_a_connection_stays_on_its_first_io_thread() {
    let Some((on_first, on_second, moved)) = client_on_two_cpus(false, None).await else {
        return;
    };
    // One pinned thread served every request, wherever the client ran.
    let placed = on_first[0].clone();
    assert!(
        on_first.iter().chain(&on_second).all(|cpu| *cpu == placed),
        "{on_first:?} {on_second:?}"
    );
    assert_eq!(moved, 0.0);
}
