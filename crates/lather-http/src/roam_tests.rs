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

#[tokio::test]
async fn a_connection_follows_its_client_to_the_io_thread_of_its_cpu() {
    let cpus = lather_pipeline::affinity::process_cpus().to_vec();
    if cpus.len() < 2 {
        // One CPU: one I/O thread, nowhere to move.
        return;
    }
    let mut server = crate::Server::builder()
        .listen("127.0.0.1:0".parse().unwrap())
        .service("/c", Cpus)
        .bind()
        .await
        .unwrap()
        .io_threads(cpus.len());
    // Every CPU counts as having time to spare and none as saturated, however busy the
    // machine running the tests is: the connection always follows, and is never shed.
    server.roam_thresholds = crate::placement::Thresholds {
        spare: 0,
        saturated: 0,
    };
    let addr = server.local_addr();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let served = tokio::spawn(server.serve(async {
        let _ = stopped.await;
    }));
    let (first, second) = (cpus[0], cpus[1]);
    // The client's thread runs on one CPU, then on another, on the same connection.
    let seen = tokio::task::spawn_blocking(move || {
        let mut stream = std::net::TcpStream::connect(addr).unwrap();
        lather_pipeline::affinity::pin_current_thread(first).unwrap();
        let on_first = calls(&mut stream, 48);
        lather_pipeline::affinity::pin_current_thread(second).unwrap();
        let on_second = calls(&mut stream, 48);
        (on_first, on_second)
    })
    .await
    .unwrap();
    // Within a few looks at the CPU (one every 16 reads), answers come from the
    // thread of the client's CPU.
    let tail = |answers: &[String]| answers[answers.len() - 8..].to_vec();
    assert_eq!(tail(&seen.0), vec![first.to_string(); 8], "{seen:?}");
    assert_eq!(tail(&seen.1), vec![second.to_string(); 8], "{seen:?}");
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
        .and_then(|n| n.trim().parse::<f64>().ok());
    assert!(moved.is_some_and(|n| n >= 1.0), "{metrics}");
    let _ = stop.send(());
    served.await.unwrap().unwrap();
}
