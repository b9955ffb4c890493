//! Asynchronous requests kept in JetStream (`async_replies` with `[nats]`, no
//! `async_store`) on a real `nats-server`: several lather nodes share the queue, each
//! request is answered once whichever node takes it, a polled answer is fetched from any
//! node, a request accepted by a node that goes away is answered by another, and a full
//! queue is refused with 503. The nodes are servers in this test process; the only process
//! started is the test's own `nats-server`, stopped by its PID. Every wait is bounded.

use crate::support;

use lather_envelope::{FaultKind, SoapVersion, WSA10_NS};
use lather_test_util::nats;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};
use support::sink::sink;
use support::*;

fn node(url: &str, extra: &str) -> String {
    format!(
        "[nats]\nurl = \"{url}\"\nsubject_prefix = \"t\"\n\
         [[service]]\nname = \"echo\"\npath = \"/echo\"\nbuiltin = \"echo\"\n\
         async_replies = true\nreply_allow = [\"127.0.0.1\"]\n{extra}"
    )
}

fn request(id: &str, reply_to: &str, text: &str) -> String {
    envelope(
        SoapVersion::V12,
        &format!(
            r#"<a:Action xmlns:a="{WSA10_NS}">urn:lather:echo#echo</a:Action><a:MessageID xmlns:a="{WSA10_NS}">{id}</a:MessageID><a:ReplyTo xmlns:a="{WSA10_NS}"><a:Address>{reply_to}</a:Address></a:ReplyTo>"#
        ),
        &format!(r#"<ns:echo xmlns:ns="urn:lather:echo"><text>{text}</text></ns:echo>"#),
    )
}

/// The `RelatesTo` of a delivered answer.
fn relates_to(body: &str) -> String {
    let end = body.find("</wsa:RelatesTo>").expect("a RelatesTo");
    let start = body[..end].rfind('>').unwrap() + 1;
    body[start..end].to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_nodes_answer_each_request_once() {
    let nats = nats::NatsServer::start_jetstream("async-two");
    let a = TestServer::start(&node(&nats.url(), "")).await;
    let b = TestServer::start(&node(&nats.url(), "")).await;
    let (sink_addr, mut received) = sink(Duration::ZERO).await;
    let reply_to = format!("http://{sink_addr}/replies");
    let ids: Vec<String> = (0..20).map(|i| format!("urn:uuid:two-{i}")).collect();
    for (i, id) in ids.iter().enumerate() {
        let to = if i % 2 == 0 { a.addr } else { b.addr };
        let answer = post(to, "/echo", SoapVersion::V12, request(id, &reply_to, id)).await;
        assert_eq!(answer.status, 202, "{}", answer.text());
    }
    // The same request resent is queued once.
    let again = post(
        a.addr,
        "/echo",
        SoapVersion::V12,
        request(&ids[0], &reply_to, &ids[0]),
    )
    .await;
    assert_eq!(again.status, 202);
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let deadline = Instant::now() + Duration::from_secs(15);
    while seen.len() < ids.len() && Instant::now() < deadline {
        if let Ok(Some(got)) = tokio::time::timeout(Duration::from_secs(1), received.recv()).await {
            let body = got.plain();
            let id = relates_to(&body);
            assert!(body.contains(&format!("<text>{id}</text>")), "{body}");
            *seen.entry(id).or_default() += 1;
        }
    }
    // Anything sent twice would come within this quiet time.
    while let Ok(Some(got)) =
        tokio::time::timeout(Duration::from_millis(700), received.recv()).await
    {
        *seen.entry(relates_to(&got.plain())).or_default() += 1;
    }
    let expected: BTreeMap<String, usize> = ids.iter().map(|id| (id.clone(), 1)).collect();
    assert_eq!(seen, expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_polled_answer_is_fetched_from_another_node() {
    let nats = nats::NatsServer::start_jetstream("async-poll");
    let a = TestServer::start(&node(&nats.url(), "")).await;
    let b = TestServer::start(&node(&nats.url(), "")).await;
    let accepted = post(
        a.addr,
        "/echo",
        SoapVersion::V12,
        request("urn:uuid:shared-poll", "urn:lather:async:poll", "polled"),
    )
    .await;
    assert_eq!(accepted.status, 202);
    // Wait until the answer is made (read from the KV bucket itself, not by polling, which
    // would fetch it), then send the same request again: the kept answer stands.
    let client = async_nats::connect(nats.url()).await.unwrap();
    let bucket = async_nats::jetstream::new(client)
        .get_key_value("t_echo_async")
        .await
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let entry = bucket.get("urn=3Auuid=3Ashared-poll").await.unwrap();
        if entry.is_some_and(|v| String::from_utf8_lossy(&v).contains("\"answer\":{")) {
            break;
        }
        assert!(Instant::now() < deadline, "the answer was never made");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let again = post(
        b.addr,
        "/echo",
        SoapVersion::V12,
        request(
            "urn:uuid:shared-poll",
            "urn:lather:async:poll",
            "polled again",
        ),
    )
    .await;
    assert_eq!(again.status, 202);
    let fetched = poll_answer(b.addr, "/echo?reply=urn:uuid:shared-poll", 200).await;
    assert!(
        fetched.text().contains("<text>polled</text>"),
        "{}",
        fetched.text()
    );
    assert!(
        fetched
            .text()
            .contains("urn:uuid:shared-poll</wsa:RelatesTo>")
    );
    // Fetched once: gone from every node.
    assert_eq!(
        get(a.addr, "/echo?reply=urn:uuid:shared-poll").await.status,
        404
    );
    assert_eq!(
        get(b.addr, "/echo?reply=urn:uuid:unknown").await.status,
        404
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_accepted_by_a_node_that_stops_is_answered_by_another() {
    let nats = nats::NatsServer::start_jetstream("async-handover");
    let closed = closed_port().await;
    let a = TestServer::start(&node(&nats.url(), "reply_attempts = 50\n")).await;
    let accepted = post(
        a.addr,
        "/echo",
        SoapVersion::V12,
        request(
            "urn:uuid:handover",
            &format!("http://{closed}/r"),
            "handed over",
        ),
    )
    .await;
    assert_eq!(accepted.status, 202);
    // The first attempt is refused (nothing listens); the node stops.
    tokio::time::sleep(Duration::from_millis(400)).await;
    drop(a);
    let listener = tokio::net::TcpListener::bind(closed).await.unwrap();
    let _b = TestServer::start(&node(&nats.url(), "reply_attempts = 50\n")).await;
    let (stream, _) = tokio::time::timeout(Duration::from_secs(20), listener.accept())
        .await
        .expect("the answer from the other node")
        .unwrap();
    let text = read_request(stream).await;
    assert!(text.starts_with("POST /r HTTP/1.1"), "{text}");
    assert!(text.contains("<text>handed over</text>"), "{text}");
    assert!(text.contains("urn:uuid:handover</wsa:RelatesTo>"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_queue_is_refused_and_an_unreachable_one_is_named() {
    let mut nats = nats::NatsServer::start_jetstream("async-full");
    let closed = closed_port().await;
    let server = TestServer::start(&node(
        &nats.url(),
        "async_max_pending = 2\nreply_attempts = 1000\n",
    ))
    .await;
    // Answers to a closed port are retried with a growing wait, so the requests stay queued.
    for i in 0..2 {
        let answer = post(
            server.addr,
            "/echo",
            SoapVersion::V12,
            request(
                &format!("urn:uuid:full-{i}"),
                &format!("http://{closed}/r"),
                "x",
            ),
        )
        .await;
        assert_eq!(answer.status, 202, "{}", answer.text());
    }
    let full = post(
        server.addr,
        "/echo",
        SoapVersion::V12,
        request("urn:uuid:full-2", &format!("http://{closed}/r"), "x"),
    )
    .await;
    full.assert_fault(FaultKind::ServerBusy, SoapVersion::V12);
    assert!(full.headers.contains_key("retry-after"));
    nats.stop();
    let down = post(
        server.addr,
        "/echo",
        SoapVersion::V12,
        request("urn:uuid:full-3", "urn:lather:async:poll", "x"),
    )
    .await;
    down.assert_fault(FaultKind::ReplyQueueUnavailable, SoapVersion::V12);
}

/// The HTTP request read from `stream` up to the end of its envelope.
async fn read_request(stream: tokio::net::TcpStream) -> String {
    let mut got = Vec::new();
    let mut buf = vec![0u8; 8192];
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        stream.readable().await.unwrap();
        match stream.try_read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                got.extend_from_slice(&buf[..n]);
                if String::from_utf8_lossy(&got).contains("Envelope>") {
                    break;
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) => panic!("{e}"),
        }
    }
    String::from_utf8_lossy(&got).into_owned()
}
