//! The admin paths and the request head at the edge: HEAD on /health and /metrics,
//! `[server] admin_allow`, a degraded /health, and the Host header (RFC 9112 §3.2).

use crate::support;

use lather_envelope::SoapVersion;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;
use support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

const SOON: Duration = Duration::from_secs(10);

async fn connect_from(from: &str, addr: SocketAddr) -> TcpStream {
    let socket = TcpSocket::new_v4().unwrap();
    socket
        .bind(SocketAddr::new(from.parse::<IpAddr>().unwrap(), 0))
        .unwrap();
    socket.connect(addr).await.unwrap()
}

/// Writes `request` and reads the answer until the server closes (send `Connection:
/// close`).
async fn raw(stream: &mut TcpStream, request: &str) -> String {
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut data = Vec::new();
    tokio::time::timeout(SOON, stream.read_to_end(&mut data))
        .await
        .expect("answered and closed")
        .unwrap();
    String::from_utf8_lossy(&data).into_owned()
}

async fn raw_from(from: &str, addr: SocketAddr, request: &str) -> String {
    raw(&mut connect_from(from, addr).await, request).await
}

fn echo_config(extra: &str) -> String {
    format!(
        "[server]\nlisten = \"127.0.0.1:0\"\n{extra}\n\
         [[service]]\nname = \"echo\"\npath = \"/echo\"\nbuiltin = \"echo\"\n"
    )
}

#[tokio::test]
async fn head_on_admin_paths_answers_like_get_without_a_body() {
    let server = TestServer::echo().await;
    for path in ["/health", "/metrics"] {
        let mut stream = TcpStream::connect(server.addr).await.unwrap();
        // HEAD then GET on one connection: no body bytes may sit between the two answers.
        let text = raw(
            &mut stream,
            &format!(
                "HEAD {path} HTTP/1.1\r\nHost: x\r\n\r\nGET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
            ),
        )
        .await;
        let (head, rest) = text.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("HTTP/1.1 200"), "{path}: {text}");
        assert!(
            head.to_ascii_lowercase().contains("content-type:"),
            "{head}"
        );
        assert!(
            rest.starts_with("HTTP/1.1 200"),
            "{path}: a body followed HEAD: {text}"
        );
        assert!(rest.ends_with("\r\n\r\nok\n"), "{rest}");
    }
}

#[tokio::test]
async fn admin_allow_lets_only_listed_addresses_read_health_and_metrics() {
    let server = TestServer::start(&echo_config(
        "admin_allow = [\"127.0.0.2\", \"10.0.0.0/8\"]",
    ))
    .await;
    for path in ["/health", "/metrics"] {
        let request = format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        let refused = raw_from("127.0.0.1", server.addr, &request).await;
        assert!(refused.starts_with("HTTP/1.1 403"), "{refused}");
        assert!(refused.contains("admin_allow"), "{refused}");
        let allowed = raw_from("127.0.0.2", server.addr, &request).await;
        assert!(allowed.starts_with("HTTP/1.1 200"), "{allowed}");
    }
    // The services themselves are not restricted.
    let answer = post(
        server.addr,
        "/echo",
        SoapVersion::V11,
        envelope(SoapVersion::V11, "", ECHO_PAYLOAD),
    )
    .await;
    assert_eq!(answer.status, http::StatusCode::OK);
}

#[tokio::test]
async fn health_reports_degraded_while_a_service_is_saturated() {
    let server = TestServer::start(
        "[server]\nlisten = \"127.0.0.1:0\"\nqueue_capacity = 1\nmax_in_flight = 1\n\
         [handlers.hold]\nkind = \"sleep\"\nmillis = 1500\n\
         [[service]]\nname = \"slow\"\npath = \"/slow\"\nbuiltin = \"echo\"\nrequest = [[\"hold\"]]\n\
         [[service]]\nname = \"echo\"\npath = \"/echo\"\nbuiltin = \"echo\"\n",
    )
    .await;
    assert_eq!(get(server.addr, "/health").await.text(), "ok\n");
    let addr = server.addr;
    let body = envelope(SoapVersion::V11, "", ECHO_PAYLOAD);
    let calls: Vec<_> = (0..2)
        .map(|_| {
            let body = body.clone();
            tokio::spawn(async move { post(addr, "/slow", SoapVersion::V11, body).await })
        })
        .collect();
    // One in flight, one waiting: the gate is full.
    let deadline = tokio::time::Instant::now() + SOON;
    let degraded = loop {
        let health = get(server.addr, "/health").await;
        if health.status == http::StatusCode::SERVICE_UNAVAILABLE {
            break health;
        }
        assert!(tokio::time::Instant::now() < deadline, "never degraded");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(degraded.text(), "degraded: slow busy\n");
    for call in calls {
        assert_eq!(call.await.unwrap().status, http::StatusCode::OK);
    }
    let health = get(server.addr, "/health").await;
    assert_eq!(
        (health.status, health.text()),
        (http::StatusCode::OK, "ok\n")
    );
}

#[tokio::test]
async fn a_missing_repeated_or_invalid_host_is_a_400_fault() {
    let server = TestServer::echo().await;
    let body = envelope(SoapVersion::V12, "", ECHO_PAYLOAD);
    let cases = [
        ("", "must carry a Host header"),
        ("Host: a\r\nHost: b\r\n", "more than one Host header"),
        ("Host: a b\r\n", "is not host[:port]"),
    ];
    for (hosts, why) in cases {
        for version in [SoapVersion::V11, SoapVersion::V12] {
            let content_type = match version {
                SoapVersion::V11 => "text/xml; charset=utf-8\r\nSOAPAction: \"\"",
                SoapVersion::V12 => "application/soap+xml; charset=utf-8",
            };
            let request = format!(
                "POST /echo HTTP/1.1\r\n{hosts}Content-Type: {content_type}\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            );
            let mut stream = TcpStream::connect(server.addr).await.unwrap();
            // The server closes the connection after the fault (no Connection: close sent).
            let answer = raw(&mut stream, &request).await;
            assert!(
                answer.starts_with("HTTP/1.1 400"),
                "{hosts:?} {version}: {answer}"
            );
            assert!(
                answer.contains("BadHost") && answer.contains(why),
                "{answer}"
            );
            assert!(answer.contains(version.namespace()), "{answer}");
        }
    }
    // HTTP/1.0 needs no Host.
    let request = format!(
        "POST /echo HTTP/1.0\r\nContent-Type: application/soap+xml\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let answer = raw(
        &mut TcpStream::connect(server.addr).await.unwrap(),
        &request,
    )
    .await;
    assert!(answer.starts_with("HTTP/1.0 200"), "{answer}");
}
