//! Asynchronous requests: a request whose ReplyTo is not anonymous gets 202 at once and
//! its answer is POSTed to the ReplyTo later with RelatesTo — retried until the sink takes
//! it; polled by MessageID when the client names urn:lather:async:poll; refused when the
//! ReplyTo is not allowed, the MessageID missing, or too many wait.

use crate::support;

use lather_envelope::{FaultKind, SoapVersion, WSA10_NS};
use std::time::Duration;
use support::sink::{next, sink};
use support::*;
use tokio::net::TcpListener;

fn config(extra: &str) -> String {
    format!(
        "[[service]]\nname = \"echo\"\npath = \"/echo\"\nbuiltin = \"echo\"\nasync_replies = true\n{extra}"
    )
}

fn request(id: Option<&str>, reply_to: &str, text: &str) -> String {
    let id = id.map_or_else(String::new, |id| {
        format!(r#"<a:MessageID xmlns:a="{WSA10_NS}">{id}</a:MessageID>"#)
    });
    envelope(
        SoapVersion::V12,
        &format!(
            r#"<a:Action xmlns:a="{WSA10_NS}">urn:lather:echo#echo</a:Action>{id}<a:ReplyTo xmlns:a="{WSA10_NS}"><a:Address>{reply_to}</a:Address></a:ReplyTo>"#
        ),
        &format!(r#"<ns:echo xmlns:ns="urn:lather:echo"><text>{text}</text></ns:echo>"#),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_answer_is_posted_to_the_reply_to_with_relates_to() {
    let (sink_addr, mut received) = sink(Duration::ZERO).await;
    let server = TestServer::start(&config("reply_allow = [\"127.0.0.1\"]\n")).await;
    let reply_to = format!("http://{sink_addr}/replies");
    let answer = post(
        server.addr,
        "/echo",
        SoapVersion::V12,
        request(Some("urn:uuid:job-1"), &reply_to, "later"),
    )
    .await;
    assert_eq!(answer.status, 202, "{}", answer.text());
    assert!(answer.body.is_empty());
    let got = next(&mut received, Duration::from_secs(5)).await;
    assert_eq!(got.path, "/replies");
    let body = got.plain();
    assert!(body.contains("<text>later</text>"), "{body}");
    assert!(body.contains("urn:uuid:job-1</wsa:RelatesTo>"), "{body}");
    assert!(body.contains(&format!("{reply_to}</wsa:To>")), "{body}");
    // An anonymous ReplyTo is answered on the connection as before.
    let sync = post(
        server.addr,
        "/echo",
        SoapVersion::V12,
        request(
            Some("urn:uuid:job-2"),
            &format!("{WSA10_NS}/anonymous"),
            "now",
        ),
    )
    .await;
    assert_eq!(sync.status, 200);
    assert!(sync.text().contains("<text>now</text>"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delivery_is_retried_until_the_reply_to_listens() {
    let port = closed_port().await.port();
    let server = TestServer::start(&config("reply_allow = [\"127.0.0.1\"]\n")).await;
    let answer = post(
        server.addr,
        "/echo",
        SoapVersion::V12,
        request(
            Some("urn:uuid:job-r"),
            &format!("http://127.0.0.1:{port}/r"),
            "retried",
        ),
    )
    .await;
    assert_eq!(answer.status, 202);
    tokio::time::sleep(Duration::from_millis(700)).await;
    // The sink comes up on the port the first attempts were refused on.
    let listener = TcpListener::bind(("127.0.0.1", port)).await.unwrap();
    let (stream, _) = tokio::time::timeout(Duration::from_secs(10), listener.accept())
        .await
        .expect("a retry in time")
        .unwrap();
    let mut buf = vec![0u8; 8192];
    let mut got = Vec::new();
    stream.readable().await.unwrap();
    loop {
        match stream.try_read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                got.extend_from_slice(&buf[..n]);
                if String::from_utf8_lossy(&got).contains("Envelope>") {
                    break;
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                stream.readable().await.unwrap();
            }
            Err(e) => panic!("{e}"),
        }
    }
    let text = String::from_utf8_lossy(&got);
    assert!(text.starts_with("POST /r HTTP/1.1"), "{text}");
    assert!(text.contains("retried"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_polling_client_fetches_its_answer_once() {
    let server = TestServer::start(&config("")).await;
    let answer = post(
        server.addr,
        "/echo",
        SoapVersion::V12,
        request(Some("urn:uuid:polled"), "urn:lather:async:poll", "fetched"),
    )
    .await;
    assert_eq!(answer.status, 202);
    let fetched = poll_answer(server.addr, "/echo?reply=urn%3Auuid%3Apolled", 100).await;
    assert!(
        fetched.text().contains("<text>fetched</text>"),
        "{}",
        fetched.text()
    );
    assert!(fetched.text().contains("urn:uuid:polled</wsa:RelatesTo>"));
    assert_eq!(
        get(server.addr, "/echo?reply=urn:uuid:polled").await.status,
        404
    );
    assert_eq!(
        get(server.addr, "/echo?reply=urn:uuid:unknown")
            .await
            .status,
        404
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_reply_to_missing_message_id_and_a_full_queue_are_faults() {
    let server = TestServer::start(&config("async_max_pending = 1\n")).await;
    // Loopback is refused by the default policy.
    let answer = post(
        server.addr,
        "/echo",
        SoapVersion::V12,
        request(Some("urn:uuid:a"), "http://127.0.0.1:9/r", "x"),
    )
    .await;
    answer.assert_fault(FaultKind::InvalidAddressingHeader, SoapVersion::V12);
    assert!(answer.text().contains("reply_allow"), "{}", answer.text());
    let answer = post(
        server.addr,
        "/echo",
        SoapVersion::V12,
        request(None, "urn:lather:async:poll", "x"),
    )
    .await;
    answer.assert_fault(FaultKind::MessageAddressingHeaderRequired, SoapVersion::V12);
    // One polled answer waits unfetched; the next request finds the queue full.
    let first = post(
        server.addr,
        "/echo",
        SoapVersion::V12,
        request(Some("urn:uuid:p1"), "urn:lather:async:poll", "x"),
    )
    .await;
    assert_eq!(first.status, 202);
    let full = post(
        server.addr,
        "/echo",
        SoapVersion::V12,
        request(Some("urn:uuid:p2"), "urn:lather:async:poll", "x"),
    )
    .await;
    full.assert_fault(FaultKind::ServerBusy, SoapVersion::V12);
    assert!(full.headers.contains_key("retry-after"));
    // The same message sent again is not a new job.
    let again = post(
        server.addr,
        "/echo",
        SoapVersion::V12,
        request(Some("urn:uuid:p1"), "urn:lather:async:poll", "x"),
    )
    .await;
    assert_eq!(again.status, 202);
}
