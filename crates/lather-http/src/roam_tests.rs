//! A connection that follows its client across CPUs, served by a whole server
//! ([`crate::roam`]); apart from `roam.rs`, which the server depends on.

use bytes::Bytes;
use lather_envelope::EnvelopeBuilder;
use lather_pipeline::{Reply, ServiceFuture, ServiceRequest, SoapService};
use std::io::{BufRead, BufReader, Read, Write};

/// Answers with the CPUs the answering thread may run on.
struct Cpus;

impl SoapService for Cpus {
    fn call<'a>(&'a self, request: ServiceRequest<'a>) -> ServiceFuture<'a> {
        Box::pin(async move {
            let here = lather_pipeline::affinity::current_thread_cpus();
            let listed: Vec<String> = here.iter().map(ToString::to_string).collect();
            let version = request.envelope.version();
            let body = format!(r#"<c:cpus xmlns:c="urn:c" here="{}"/>"#, listed.join(","));
            Ok(Reply::Written(
                version,
                EnvelopeBuilder::new(version)
                    .body(Bytes::from(body))
                    .build(),
            ))
        })
    }
}

/// `calls` requests on one keep-alive connection; the `here` of each answer.
fn calls(stream: &mut std::net::TcpStream, calls: usize) -> Vec<String> {
    let body = r#"<s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope"><s:Body><m:x xmlns:m="urn:m"/></s:Body></s:Envelope>"#;
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
        let text = String::from_utf8(answer).unwrap();
        let start = text.find("here=\"").unwrap() + 6;
        let end = start + text[start..].find('"').unwrap();
        seen.push(text[start..end].to_owned());
    }
    seen
}

/// Serves `Cpus` with one pinned I/O thread per CPU, roaming as `[server]
/// roam_connections = configured` says, or as `set` says through
/// [`crate::Server::roam_connections`]; a client thread on the first CPU, then on the
/// second, sends 48 requests from each on one connection.
/// Returns the CPUs of the answering threads, from each CPU, and the moves counted; `None`
/// on a machine with one CPU (one I/O thread, nowhere to move).
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
    // roaming connection always follows, and is never shed.
    let settings = lather_config::ServerConfig {
        roam_connections: configured,
        roam_spare_idle_percent: 0,
        roam_saturated_idle_percent: 0,
        ..lather_config::ServerConfig::default()
    };
    let mut server = crate::Server::builder()
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
    let addr = server.local_addr();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let served = tokio::spawn(server.serve(async {
        let _ = stopped.await;
    }));
    let (first, second) = (cpus[0], cpus[1]);
    let (on_first, on_second) = tokio::task::spawn_blocking(move || {
        let mut stream = std::net::TcpStream::connect(addr).unwrap();
        lather_pipeline::affinity::pin_current_thread(first).unwrap();
        let on_first = calls(&mut stream, 48);
        lather_pipeline::affinity::pin_current_thread(second).unwrap();
        let on_second = calls(&mut stream, 48);
        (on_first, on_second)
    })
    .await
    .unwrap();
    let metrics = tokio::task::spawn_blocking(move || {
        let mut stream = std::net::TcpStream::connect(addr).unwrap();
        stream
            .write_all(b"GET /metrics HTTP/1.1\r\nhost: t\r\nconnection: close\r\n\r\n")
            .unwrap();
        let mut text = String::new();
        stream.read_to_string(&mut text).unwrap();
        text
    })
    .await
    .unwrap();
    let moved = metrics
        .lines()
        .find_map(|line| line.strip_prefix("lather_connections_moved_total "))
        .and_then(|n| n.trim().parse::<f64>().ok())
        .unwrap_or_else(|| panic!("no moved counter in {metrics}"));
    let _ = stop.send(());
    served.await.unwrap().unwrap();
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
