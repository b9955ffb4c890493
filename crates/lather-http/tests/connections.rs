//! The listener under idle and piled-up connections: caps in all and per client address,
//! idle connections closed from accept on, a header timeout, and refusals counted.

use crate::support;

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;
use support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

/// Generous bound for anything the server should do "soon" (an unfixed server never does).
const SOON: Duration = Duration::from_secs(10);

fn server_config(extra: &str) -> String {
    format!(
        "[server]\nlisten = \"127.0.0.1:0\"\n{extra}\n\
         [[service]]\nname = \"echo\"\npath = \"/echo\"\nbuiltin = \"echo\"\n"
    )
}

/// A connection to `addr` from the loopback address `from`.
async fn connect_from(from: &str, addr: SocketAddr) -> TcpStream {
    let socket = TcpSocket::new_v4().unwrap();
    socket
        .bind(SocketAddr::new(from.parse::<IpAddr>().unwrap(), 0))
        .unwrap();
    socket.connect(addr).await.unwrap()
}

/// Whether the server closes `stream` within `within`: EOF or a reset. `false` when the
/// stream stays open (nothing arrives) for that long.
async fn closed_within(stream: &mut TcpStream, within: Duration) -> bool {
    let mut buf = [0u8; 256];
    loop {
        match tokio::time::timeout(within, stream.read(&mut buf)).await {
            Err(_) => return false,
            Ok(Ok(0) | Err(_)) => return true,
            Ok(Ok(_)) => {} // a response; keep reading until the close
        }
    }
}

/// One raw HTTP/1.1 exchange on `stream`: the response head and body as text (the body
/// read by its Content-Length).
async fn exchange(stream: &mut TcpStream, request: &str) -> String {
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut data = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = tokio::time::timeout(SOON, stream.read(&mut buf))
            .await
            .expect("an answer")
            .unwrap();
        data.extend_from_slice(&buf[..n]);
        let text = String::from_utf8_lossy(&data).into_owned();
        if let Some(end) = text.find("\r\n\r\n") {
            let length = text[..end]
                .lines()
                .find_map(|l| {
                    l.to_ascii_lowercase()
                        .strip_prefix("content-length:")
                        .map(|v| v.trim().parse::<usize>().unwrap())
                })
                .unwrap_or(0);
            let head_is_for_head = request.starts_with("HEAD ");
            if head_is_for_head || data.len() >= end + 4 + length || n == 0 {
                return text;
            }
        }
        assert!(n > 0, "connection closed before a full answer: {text}");
    }
}

async fn get_from(from: &str, addr: SocketAddr, path: &str) -> String {
    let mut stream = connect_from(from, addr).await;
    exchange(
        &mut stream,
        &format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"),
    )
    .await
}

#[tokio::test]
async fn connections_beyond_the_per_client_cap_are_closed_and_others_still_served() {
    let server = TestServer::start(&server_config(
        "max_connections_per_client = 50\nidle_timeout_ms = 60000",
    ))
    .await;
    let mut held = Vec::new();
    for _ in 0..80 {
        held.push(TcpStream::connect(server.addr).await.unwrap());
    }
    // All 80 read at once: the 30 refused ones end at once, the 50 admitted stay open.
    let checks = held.into_iter().map(|mut stream| {
        tokio::spawn(async move {
            let closed = closed_within(&mut stream, Duration::from_secs(3)).await;
            (closed, stream)
        })
    });
    let results = futures_util::future::join_all(checks).await;
    let closed = results.iter().filter(|r| r.as_ref().unwrap().0).count();
    assert_eq!(
        closed, 30,
        "the connections beyond the cap of 50 are closed"
    );
    // Another client address is served while 50 idle connections are held.
    let answer = get_from("127.0.0.2", server.addr, "/health").await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    let metrics = get_from("127.0.0.2", server.addr, "/metrics").await;
    assert!(
        metrics
            .contains("lather_connections_refused_total{reason=\"max_connections_per_client\"} 30"),
        "{metrics}"
    );
    assert!(metrics.contains("lather_connections_open 51"), "{metrics}");
    drop(results);
}

#[tokio::test]
async fn the_global_cap_refuses_until_a_connection_ends() {
    let server = TestServer::start(&server_config(
        "max_connections = 5\nidle_timeout_ms = 60000",
    ))
    .await;
    let mut held = Vec::new();
    for _ in 0..5 {
        let mut stream = TcpStream::connect(server.addr).await.unwrap();
        // Served: each admitted connection answers (so it is counted before the next).
        let answer = exchange(
            &mut stream,
            &format!("GET /health HTTP/1.1\r\nHost: {}\r\n\r\n", server.addr),
        )
        .await;
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        held.push(stream);
    }
    let mut sixth = connect_from("127.0.0.3", server.addr).await;
    assert!(
        closed_within(&mut sixth, SOON).await,
        "the sixth is refused"
    );
    drop(held.pop());
    // The freed place is taken by a new connection (the close reaches the server soon).
    let deadline = tokio::time::Instant::now() + SOON;
    loop {
        let mut stream = TcpStream::connect(server.addr).await.unwrap();
        let request = format!("GET /health HTTP/1.1\r\nHost: {}\r\n\r\n", server.addr);
        let _ = stream.write_all(request.as_bytes()).await;
        let mut buf = [0u8; 64];
        if let Ok(Ok(n)) = tokio::time::timeout(SOON, stream.read(&mut buf)).await
            && buf[..n].starts_with(b"HTTP/1.1 200")
        {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "never admitted again"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn a_connection_that_sends_nothing_is_closed_after_the_idle_timeout() {
    let server = TestServer::start(&server_config("idle_timeout_ms = 300")).await;
    // Silent from accept on.
    let mut silent = TcpStream::connect(server.addr).await.unwrap();
    assert!(
        closed_within(&mut silent, SOON).await,
        "silent connection kept"
    );
    // Idle between keep-alive requests.
    let mut kept = TcpStream::connect(server.addr).await.unwrap();
    let answer = exchange(
        &mut kept,
        &format!("GET /health HTTP/1.1\r\nHost: {}\r\n\r\n", server.addr),
    )
    .await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(closed_within(&mut kept, SOON).await, "idle keep-alive kept");
    let metrics = get(server.addr, "/metrics").await;
    assert_eq!(
        metric(metrics.text(), "lather_connections_idle_closed_total"),
        Some(2.0),
        "{}",
        metrics.text()
    );
}

#[tokio::test]
async fn a_request_slower_than_the_idle_timeout_is_still_answered() {
    let backend = fixed_backend(
        200,
        "text/xml; charset=utf-8",
        "<s:Envelope xmlns:s=\"http://schemas.xmlsoap.org/soap/envelope/\"><s:Body/></s:Envelope>",
        1200,
    )
    .await;
    let server = TestServer::start(&format!(
        "[server]\nlisten = \"127.0.0.1:0\"\nidle_timeout_ms = 200\n\
         [[service]]\nname = \"gw\"\npath = \"/gw\"\nupstream = [\"http://{backend}/ws\"]\n"
    ))
    .await;
    let body = envelope(lather_envelope::SoapVersion::V11, "", ECHO_PAYLOAD);
    let answer = post(server.addr, "/gw", lather_envelope::SoapVersion::V11, body).await;
    assert_eq!(answer.status, http::StatusCode::OK, "{}", answer.text());
}

#[tokio::test]
async fn a_head_that_stops_midway_is_cut_by_the_header_timeout() {
    let server = TestServer::start(&server_config(
        "header_timeout_ms = 300\nidle_timeout_ms = 60000",
    ))
    .await;
    let mut stream = TcpStream::connect(server.addr).await.unwrap();
    stream
        .write_all(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Type: text/xml\r\n")
        .await
        .unwrap();
    assert!(
        closed_within(&mut stream, SOON).await,
        "half a head kept open"
    );
}

#[tokio::test]
async fn a_head_trickled_byte_by_byte_is_cut_by_the_header_timeout() {
    let server = TestServer::start(&server_config(
        "header_timeout_ms = 400\nidle_timeout_ms = 60000",
    ))
    .await;
    let mut stream = TcpStream::connect(server.addr).await.unwrap();
    let head = b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Type: text/xml\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    let started = tokio::time::Instant::now();
    let mut cut = false;
    // A byte every 50 ms keeps the connection from being idle; the head never ends.
    for byte in head {
        if stream.write_all(&[*byte]).await.is_err() {
            cut = true;
            break;
        }
        let mut buf = [0u8; 64];
        if let Ok(Ok(0) | Err(_)) =
            tokio::time::timeout(Duration::from_millis(50), stream.read(&mut buf)).await
        {
            cut = true;
            break;
        }
    }
    assert!(cut, "a head trickled for {:?} was kept", started.elapsed());
}

#[tokio::test]
async fn an_idle_keep_alive_connection_lasts_until_the_idle_timeout_not_the_header_timeout() {
    let server = TestServer::start(&server_config(
        "header_timeout_ms = 200\nidle_timeout_ms = 1500",
    ))
    .await;
    let mut kept = TcpStream::connect(server.addr).await.unwrap();
    let request = format!("GET /health HTTP/1.1\r\nHost: {}\r\n\r\n", server.addr);
    assert!(
        exchange(&mut kept, &request)
            .await
            .starts_with("HTTP/1.1 200")
    );
    // No head begun: the header timeout does not apply, however long it has passed.
    assert!(
        !closed_within(&mut kept, Duration::from_millis(600)).await,
        "closed as a slow head"
    );
    assert!(
        exchange(&mut kept, &request)
            .await
            .starts_with("HTTP/1.1 200")
    );
    assert!(closed_within(&mut kept, SOON).await, "idle keep-alive kept");
}
