//! Issue 10 item 5: a request body is read before admission, at a minimum pace. Slow
//! senders get `RequestTooSlow` (408) and a closed connection; they hold no admission slot,
//! so other clients are served, and the adaptive limit learns nothing from them.

use crate::support;

use http::StatusCode;
use lather_envelope::SoapVersion;
use std::net::SocketAddr;
use std::time::Duration;
use support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::{Instant, timeout};

const ECHO: &str = "[[service]]\nname = \"echo\"\npath = \"/echo\"\nbuiltin = \"echo\"\n";

/// The request head of a SOAP 1.1 echo POST whose body is `len` bytes.
fn head(addr: SocketAddr, len: usize) -> String {
    format!(
        "POST /echo HTTP/1.1\r\nhost: {addr}\r\ncontent-type: text/xml; charset=utf-8\r\n\
         soapaction: \"urn:echo\"\r\ncontent-length: {len}\r\n\r\n"
    )
}

/// Reads whatever the server sends until it closes the connection (or `within` passes).
async fn read_to_close(stream: &mut TcpStream, within: Duration) -> (String, bool) {
    let mut got = Vec::new();
    let closed = timeout(within, stream.read_to_end(&mut got)).await.is_ok();
    (String::from_utf8_lossy(&got).into_owned(), closed)
}

/// One slow sender: headers, then one body byte every 2 s, for at most `run`. Returns what
/// the server answered and whether it closed the connection.
async fn trickle(addr: SocketAddr, run: Duration) -> (String, bool) {
    let body = envelope(SoapVersion::V11, "", ECHO_PAYLOAD);
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream
        .write_all(head(addr, body.len()).as_bytes())
        .await
        .unwrap();
    let until = Instant::now() + run;
    let mut answer = String::new();
    for byte in body.bytes() {
        if stream.write_all(&[byte]).await.is_err() || Instant::now() >= until {
            break;
        }
        let mut buf = [0u8; 4096];
        match timeout(Duration::from_secs(2), stream.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => return (answer, true),
            Ok(Ok(n)) => {
                answer.push_str(&String::from_utf8_lossy(&buf[..n]));
                let (rest, closed) = read_to_close(&mut stream, Duration::from_secs(2)).await;
                answer.push_str(&rest);
                return (answer, closed);
            }
            Err(_) => {}
        }
    }
    let (rest, closed) = read_to_close(&mut stream, Duration::from_millis(100)).await;
    answer.push_str(&rest);
    (answer, closed)
}

fn echo_request(addr: SocketAddr) -> http::Request<http_body_util::Full<bytes::Bytes>> {
    soap_request(
        addr,
        "/echo",
        SoapVersion::V11,
        envelope(SoapVersion::V11, "", ECHO_PAYLOAD),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_senders_are_cut_and_hold_no_slot_while_others_are_served() {
    // A small fixed window makes the old behaviour (permit before body) block everyone.
    let s = TestServer::start(&format!(
        "[server]\nlisten = \"127.0.0.1:0\"\nmax_in_flight = 8\nqueue_capacity = 16\n{ECHO}"
    ))
    .await;
    let addr = s.addr;
    let slow: Vec<_> = (0..20)
        .map(|_| tokio::spawn(trickle(addr, Duration::from_secs(5))))
        .collect();
    tokio::time::sleep(Duration::from_millis(200)).await;
    // A normal client keeps being answered while the slow ones trickle.
    let started = Instant::now();
    let mut served = 0;
    while started.elapsed() < Duration::from_secs(3) {
        let answer = timeout(Duration::from_secs(10), send(addr, echo_request(addr)))
            .await
            .expect("a normal request waited behind the slow senders");
        assert_eq!(answer.status, StatusCode::OK, "{}", answer.text());
        served += 1;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(served >= 10, "{served}");
    for task in slow {
        let (answer, closed) = task.await.unwrap();
        assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
        assert!(answer.contains("RequestTooSlow"), "{answer}");
        assert!(closed, "the connection stayed open: {answer}");
    }
    let text = get(addr, "/metrics").await.text().to_owned();
    assert_eq!(
        metric(
            &text,
            r#"lather_faults_total{service="echo",fault="RequestTooSlow"}"#
        ),
        Some(20.0),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_senders_teach_the_adaptive_limit_nothing() {
    let s = TestServer::start(&format!(
        "[server]\nlisten = \"127.0.0.1:0\"\nmax_in_flight = \"auto\"\nmin_in_flight = 6\n{ECHO}"
    ))
    .await;
    let addr = s.addr;
    let slow: Vec<_> = (0..20)
        .map(|_| tokio::spawn(trickle(addr, Duration::from_secs(5))))
        .collect();
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(3) {
        let answer = timeout(Duration::from_secs(10), send(addr, echo_request(addr)))
            .await
            .expect("a normal request was not answered");
        assert_eq!(answer.status, StatusCode::OK, "{}", answer.text());
    }
    for task in slow {
        let (answer, _) = task.await.unwrap();
        assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    }
    let text = get(addr, "/metrics").await.text().to_owned();
    let limit = metric(&text, r#"lather_admission_limit{service="echo"}"#).unwrap();
    assert!(
        limit >= 6.0,
        "the limit fell below its floor: {limit}\n{text}"
    );
    assert_eq!(
        metric(&text, r#"lather_admission_in_flight{service="echo"}"#),
        Some(0.0)
    );
}

#[tokio::test]
async fn a_body_that_takes_longer_than_body_timeout_is_refused() {
    let s = TestServer::start(&format!(
        "[server]\nlisten = \"127.0.0.1:0\"\nbody_timeout_ms = 1500\nmin_body_bytes_per_s = 0\n{ECHO}"
    ))
    .await;
    let body = envelope(SoapVersion::V11, "", ECHO_PAYLOAD);
    let mut stream = TcpStream::connect(s.addr).await.unwrap();
    stream
        .write_all(head(s.addr, body.len()).as_bytes())
        .await
        .unwrap();
    // 5 bytes/s: the rate rule is off, the total bound cuts it.
    let mut sent = 0;
    let answer = loop {
        stream
            .write_all(&body.as_bytes()[sent..sent + 1])
            .await
            .unwrap();
        sent += 1;
        let mut buf = [0u8; 4096];
        if let Ok(Ok(n)) = timeout(Duration::from_millis(200), stream.read(&mut buf)).await {
            break String::from_utf8_lossy(&buf[..n]).into_owned();
        }
        assert!(sent < 50, "no answer after {sent} bytes over 10 s");
    };
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("within 1500 ms"), "{answer}");
}

/// Sends `body` in `chunk`-byte pieces with `pause` between them; returns the answer head.
async fn paced(addr: SocketAddr, body: &[u8], chunk: usize, pause: Duration) -> String {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream
        .write_all(head(addr, body.len()).as_bytes())
        .await
        .unwrap();
    for piece in body.chunks(chunk) {
        tokio::time::sleep(pause).await;
        stream.write_all(piece).await.unwrap();
    }
    let mut got = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    // Read until the head and the whole answer body arrive (or the server closes).
    let _ = timeout(Duration::from_secs(30), async {
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => got.extend_from_slice(&buf[..n]),
            }
            if got
                .windows(b"Envelope>".len())
                .filter(|w| w == b"Envelope>")
                .count()
                > 0
            {
                break;
            }
        }
    })
    .await;
    String::from_utf8_lossy(&got[..got.len().min(200)]).into_owned()
}

#[tokio::test]
async fn a_slow_but_steady_sender_is_served() {
    let s = TestServer::start(ECHO).await;
    // About 4 KiB/s for 3 s, starting after a pause within the grace.
    let text = "x".repeat(12 * 1024);
    let payload = format!(r#"<ns:echo xmlns:ns="urn:lather:echo"><text>{text}</text></ns:echo>"#);
    let body = envelope(SoapVersion::V11, "", &payload);
    let answer = paced(s.addr, body.as_bytes(), 1024, Duration::from_millis(250)).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
}

#[tokio::test]
async fn a_large_body_with_pauses_is_served() {
    let s = TestServer::start(ECHO).await;
    // 3.5 MiB in 256 KiB pieces with 100 ms pauses.
    let text = "y".repeat(3 * 1024 * 1024 + 512 * 1024);
    let payload = format!(r#"<ns:echo xmlns:ns="urn:lather:echo"><text>{text}</text></ns:echo>"#);
    let body = envelope(SoapVersion::V11, "", &payload);
    let answer = paced(
        s.addr,
        body.as_bytes(),
        256 * 1024,
        Duration::from_millis(100),
    )
    .await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
}
