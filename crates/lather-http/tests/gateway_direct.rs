//! The gateway's own HTTP/1.1 client towards `http://` backends, against a scripted
//! backend on a real socket: answers in every framing are passed on, a keep-alive
//! connection carries the next request, a connection the backend closed while idle is
//! replaced, and an answer over `max_response_bytes` is a fault.

use crate::support;

use http::StatusCode;
use lather_envelope::{FaultKind, SoapVersion};
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const ANSWER: &str = r#"<s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope"><s:Body><ok/></s:Body></s:Envelope>"#;

/// How the scripted backend frames its answers and what it does after each.
#[derive(Clone, Copy)]
enum Script {
    /// `Content-Length`, connection kept.
    Length,
    /// Chunked in two chunks with a trailer, connection kept.
    Chunked,
    /// Delimited by closing the connection.
    UntilClose,
    /// `Content-Length`, then the connection closed after a moment (as an idle timeout).
    LengthThenClose,
}

/// A backend answering every request with [`ANSWER`] per `script`; counts the
/// connections it accepted.
async fn backend(script: Script) -> (SocketAddr, Arc<AtomicUsize>) {
    backend_answering(script, ANSWER.into()).await
}

/// A backend answering every request with `body` per `script`.
async fn backend_answering(script: Script, body: Arc<str>) -> (SocketAddr, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let accepted = Arc::new(AtomicUsize::new(0));
    let count = accepted.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            count.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(serve(stream, script, body.clone()));
        }
    });
    (addr, accepted)
}

/// Reads requests (head and `Content-Length` body) off `stream` and answers each.
async fn serve(mut stream: TcpStream, script: Script, body: Arc<str>) {
    let mut buf = Vec::new();
    loop {
        let Some(end) = request_end(&mut stream, &mut buf).await else {
            return;
        };
        buf.drain(..end);
        let answer = match script {
            Script::Length | Script::LengthThenClose => format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/soap+xml\r\ncontent-length: {}\r\n\r\n{body}",
                body.len()
            ),
            Script::Chunked => {
                let (a, b) = body.split_at(20);
                format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/soap+xml\r\ntransfer-encoding: chunked\r\n\r\n{:x}\r\n{a}\r\n{:x};note=1\r\n{b}\r\n0\r\nx-trailer: 1\r\n\r\n",
                    a.len(),
                    b.len()
                )
            }
            Script::UntilClose => {
                format!("HTTP/1.1 200 OK\r\ncontent-type: application/soap+xml\r\n\r\n{body}")
            }
        };
        if stream.write_all(answer.as_bytes()).await.is_err() {
            return;
        }
        match script {
            Script::UntilClose => return,
            Script::LengthThenClose => {
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                return;
            }
            _ => {}
        }
    }
}

/// Reads until `buf` holds a whole request; its length, or `None` at the end of the stream.
async fn request_end(stream: &mut TcpStream, buf: &mut Vec<u8>) -> Option<usize> {
    loop {
        if let Some(head) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let text = String::from_utf8_lossy(&buf[..head]).to_ascii_lowercase();
            let length: usize = text
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .map_or(0, |v| v.trim().parse().unwrap());
            if buf.len() >= head + 4 + length {
                return Some(head + 4 + length);
            }
        }
        let mut chunk = [0u8; 4096];
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

/// The gateway service forwarding to `backend`'s `/ws`.
fn gateway(backend: SocketAddr, extra: &str) -> String {
    gateway_service(&[format!("http://{backend}/ws")], extra)
}

#[tokio::test]
async fn answers_in_every_framing_are_passed_on() {
    for script in [Script::Length, Script::Chunked, Script::UntilClose] {
        let (backend, _) = backend(script).await;
        let gw = TestServer::start(&gateway(backend, "")).await;
        for _ in 0..3 {
            let answer = call_gateway(gw.addr).await;
            assert_eq!(answer.status, StatusCode::OK, "{}", answer.text());
            assert_eq!(answer.text(), ANSWER);
        }
    }
}

#[tokio::test]
async fn a_keep_alive_connection_carries_the_next_requests() {
    let (backend, accepted) = backend(Script::Length).await;
    // One I/O thread: every request comes from the same idle list.
    let gw = TestServer::start(&format!(
        "[server]\nlisten = \"127.0.0.1:0\"\nworkers = 1\n\n{}",
        gateway(backend, "")
    ))
    .await;
    for _ in 0..5 {
        assert_eq!(call_gateway(gw.addr).await.status, StatusCode::OK);
    }
    assert_eq!(accepted.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_connection_closed_while_idle_is_replaced() {
    let (backend, accepted) = backend(Script::LengthThenClose).await;
    let gw = TestServer::start(&format!(
        "[server]\nlisten = \"127.0.0.1:0\"\nworkers = 1\n\n{}",
        gateway(backend, "")
    ))
    .await;
    for _ in 0..3 {
        let answer = call_gateway(gw.addr).await;
        assert_eq!(answer.status, StatusCode::OK, "{}", answer.text());
        // Let the backend close the connection the gateway keeps.
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    assert_eq!(accepted.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn an_answer_over_the_limit_is_a_fault_in_every_framing() {
    // The bound is `max_message_bytes`: the request passes it, the answer does not.
    let big: Arc<str> = format!(
        r#"<s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope"><s:Body><ok>{}</ok></s:Body></s:Envelope>"#,
        "x".repeat(8192)
    )
    .into();
    for script in [Script::Length, Script::Chunked, Script::UntilClose] {
        let (backend, _) = backend_answering(script, big.clone()).await;
        let config = format!(
            "[server]\nlisten = \"127.0.0.1:0\"\nmax_message_bytes = 4096\n\n{}",
            gateway(backend, "")
        );
        let gw = TestServer::start(&config).await;
        let answer = call_gateway(gw.addr).await;
        answer.assert_fault(FaultKind::UpstreamFailed, SoapVersion::V12);
        assert!(
            answer.text().contains("answer could not be read")
                && answer.text().contains("limit 4096 bytes"),
            "{}",
            answer.text()
        );
    }
}
