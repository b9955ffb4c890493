//! Event sources on several lather nodes sharing a real `nats-server` (JetStream on): the
//! subscriptions live in a JetStream KV bucket, events come from the service's subject in
//! a queue group, and each subscriber gets each event once whichever node takes it.
//! Two nodes are two servers in this test process, each with its own event source and its
//! own NATS connection. Every wait is bounded; the only process started is the test's own
//! `nats-server`, stopped by its PID.

use crate::support;

use lather_test_util::nats;

use bytes::Bytes;
use http::Request;
use http_body_util::BodyExt;
use lather_envelope::{FaultKind, SoapVersion};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use support::{Answer, TestServer};
use tokio::sync::mpsc;

const WSE: &str = "http://schemas.xmlsoap.org/ws/2004/08/eventing";
const WSA: &str = "http://www.w3.org/2005/08/addressing";
const SOAP: SoapVersion = SoapVersion::V12;

/// A sink answering 202 and reporting each body it receives, by path.
async fn sink() -> (SocketAddr, mpsc::UnboundedReceiver<(String, String)>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let addr = lather_test_util::http::serve(move |req: Request<hyper::body::Incoming>| {
        let tx = tx.clone();
        async move {
            let path = req.uri().path().to_owned();
            let body = req.into_body().collect().await.unwrap().to_bytes();
            let _ = tx.send((path, String::from_utf8(body.to_vec()).unwrap()));
            lather_test_util::http::empty(http::StatusCode::ACCEPTED)
        }
    })
    .await;
    (addr, rx)
}

/// Everything the sink receives within `quiet` of the previous message (at most `within`).
async fn drain(
    rx: &mut mpsc::UnboundedReceiver<(String, String)>,
    expected: usize,
    within: Duration,
    quiet: Duration,
) -> Vec<(String, String)> {
    let deadline = Instant::now() + within;
    let mut got = Vec::new();
    loop {
        let wait = if got.len() >= expected {
            quiet
        } else {
            deadline.saturating_duration_since(Instant::now())
        };
        match tokio::time::timeout(wait, rx.recv()).await {
            Ok(Some(m)) => got.push(m),
            _ => return got,
        }
    }
}

/// A node: an event source named `events` at `/events` sharing its subscriptions over the
/// NATS server at `url`.
async fn node(url: &str) -> TestServer {
    TestServer::start(&format!(
        "[nats]\nurl = \"{url}\"\nconnect_timeout_ms = 1000\n[[service]]\nname = \"events\"\npath = \"/events\"\nbuiltin = \"event-source\"\nnotify_allow = [\"127.0.0.1\"]\n"
    ))
    .await
}

async fn post(addr: SocketAddr, path: &str, action: &str, body: String) -> Answer {
    support::post_with_action(addr, path, SOAP, action, body).await
}

fn request(operation: &str, headers: &str, body: &str) -> String {
    support::envelope(
        SOAP,
        &format!(
            r#"<wsa:Action xmlns:wsa="{WSA}">{WSE}/{operation}</wsa:Action><wsa:MessageID xmlns:wsa="{WSA}">urn:uuid:req-1</wsa:MessageID>{headers}"#
        ),
        body,
    )
}

/// Subscribes `notify` (and `end_to`) on `server`; the answer and the identifier.
async fn subscribe(
    server: &TestServer,
    notify: SocketAddr,
    end_to: Option<SocketAddr>,
) -> (Answer, String) {
    let end_to = end_to.map_or(String::new(), |a| {
        format!(r#"<wse:EndTo><wsa:Address>http://{a}/end</wsa:Address></wse:EndTo>"#)
    });
    let body = format!(
        r#"<wse:Subscribe xmlns:wse="{WSE}" xmlns:wsa="{WSA}">{end_to}<wse:Delivery><wse:NotifyTo><wsa:Address>http://{notify}/sink</wsa:Address></wse:NotifyTo></wse:Delivery><wse:Expires>PT600S</wse:Expires></wse:Subscribe>"#
    );
    let answer = post(
        server.addr,
        "/events",
        &format!("{WSE}/Subscribe"),
        request("Subscribe", "", &body),
    )
    .await;
    let text = answer.text();
    // The identifier (not the wsa:RelatesTo, which is a urn:uuid: too).
    let id = text.find("Identifier").map_or(String::new(), |start| {
        let start = start + text[start..].find('>').unwrap() + 1;
        text[start..start + text[start..].find('<').unwrap()].to_owned()
    });
    (answer, id)
}

async fn manager_op(server: &TestServer, op: &str, id: &str, body: &str) -> Answer {
    let header = format!(r#"<wse:Identifier xmlns:wse="{WSE}">{id}</wse:Identifier>"#);
    post(
        server.addr,
        "/events",
        &format!("{WSE}/{op}"),
        request(op, &header, body),
    )
    .await
}

/// Waits (at most 10 s) until `server` knows subscription `id` (`known`) or not.
async fn await_known(server: &TestServer, id: &str, known: bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let status = manager_op(
            server,
            "GetStatus",
            id,
            &format!(r#"<wse:GetStatus xmlns:wse="{WSE}"/>"#),
        )
        .await;
        if (status.status == 200) == known {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "node {} never saw {id} {}",
            server.addr,
            if known { "appear" } else { "go" }
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn publish(server: &TestServer, event: &str) -> usize {
    let answer = post(
        server.addr,
        "/events/publish",
        "urn:app:Tick",
        support::envelope(SOAP, "", event),
    )
    .await;
    assert_eq!(answer.status, 200, "{}", answer.text());
    let text = answer.text();
    let start = text.find("queued=\"").unwrap() + 8;
    text[start..start + text[start..].find('"').unwrap()]
        .parse()
        .unwrap()
}

fn tick(i: usize) -> String {
    format!(r#"<e:Tick xmlns:e="urn:e">{i}</e:Tick>"#)
}

/// The `n` of each `<e:Tick>` the sink received, counted.
fn ticks(received: &[(String, String)]) -> BTreeMap<usize, usize> {
    let mut counts = BTreeMap::new();
    for (_, body) in received {
        let start = body.find("<e:Tick").expect("a tick");
        let start = start + body[start..].find('>').unwrap() + 1;
        let n: usize = body[start..start + body[start..].find('<').unwrap()]
            .parse()
            .unwrap();
        *counts.entry(n).or_insert(0) += 1;
    }
    counts
}

/// A plain NATS client (the publisher of events).
async fn publisher(url: &str) -> async_nats::Client {
    async_nats::connect(url).await.expect("NATS client")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscription_made_on_one_node_is_served_and_ended_by_the_other() {
    let nats = nats::NatsServer::start_jetstream("ev-two");
    let a = node(&nats.url()).await;
    let b = node(&nats.url()).await;
    let (sink_addr, mut rx) = sink().await;

    let (answer, id) = subscribe(&a, sink_addr, None).await;
    assert_eq!(answer.status, 200, "{}", answer.text());
    await_known(&b, &id, true).await;

    // Published on B: the sink gets it exactly once.
    assert_eq!(publish(&b, &tick(1)).await, 1);
    let got = drain(
        &mut rx,
        1,
        Duration::from_secs(10),
        Duration::from_millis(500),
    )
    .await;
    assert_eq!(ticks(&got), BTreeMap::from([(1, 1)]), "{got:?}");

    // Unsubscribed on B: A stops delivering.
    let answer = manager_op(
        &b,
        "Unsubscribe",
        &id,
        &format!(r#"<wse:Unsubscribe xmlns:wse="{WSE}"/>"#),
    )
    .await;
    assert_eq!(answer.status, 200, "{}", answer.text());
    await_known(&a, &id, false).await;
    assert_eq!(publish(&a, &tick(2)).await, 0);
    let got = drain(&mut rx, 0, Duration::ZERO, Duration::from_millis(300)).await;
    assert!(got.is_empty(), "{got:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_from_the_subject_reach_each_sink_once_with_two_nodes() {
    const EVENTS: usize = 200;
    let nats = nats::NatsServer::start_jetstream("ev-subject");
    let a = node(&nats.url()).await;
    let b = node(&nats.url()).await;
    let (sink1, mut rx1) = sink().await;
    let (sink2, mut rx2) = sink().await;
    let (_, id1) = subscribe(&a, sink1, None).await;
    let (_, id2) = subscribe(&b, sink2, None).await;
    for id in [&id1, &id2] {
        await_known(&a, id, true).await;
        await_known(&b, id, true).await;
    }

    let client = publisher(&nats.url()).await;
    for i in 0..EVENTS {
        let mut headers = async_nats::HeaderMap::new();
        headers.insert("Lather-Action", "urn:app:Tick");
        client
            .publish_with_headers("lather.events.events", headers, Bytes::from(tick(i)))
            .await
            .unwrap();
    }
    client.flush().await.unwrap();

    let expected: BTreeMap<usize, usize> = (0..EVENTS).map(|i| (i, 1)).collect();
    for rx in [&mut rx1, &mut rx2] {
        let got = drain(
            rx,
            EVENTS,
            Duration::from_secs(30),
            Duration::from_millis(500),
        )
        .await;
        assert_eq!(ticks(&got), expected);
        assert!(got[0].1.contains("urn:app:Tick"), "{}", got[0].1);
    }

    // A request gets the count queued; a payload that is not one element is refused.
    let answer = client
        .request("lather.events.events", Bytes::from(tick(EVENTS)))
        .await
        .unwrap();
    assert_eq!(&answer.payload[..], b"queued=2");
    let answer = client
        .request("lather.events.events", Bytes::from_static(b"<a/><b/>"))
        .await
        .unwrap();
    let text = String::from_utf8_lossy(&answer.payload).into_owned();
    assert!(text.starts_with("error: "), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_sink_gets_one_subscription_end_from_two_nodes() {
    let nats = nats::NatsServer::start_jetstream("ev-end");
    let a = node(&nats.url()).await;
    let b = node(&nats.url()).await;
    let dead = support::closed_port().await;
    let (end_addr, mut ends) = sink().await;
    let (_, id) = subscribe(&a, dead, Some(end_addr)).await;
    await_known(&b, &id, true).await;
    // Both nodes deliver (and fail); only one may send SubscriptionEnd.
    assert_eq!(publish(&a, &tick(1)).await, 1);
    assert_eq!(publish(&b, &tick(2)).await, 1);
    let got = drain(
        &mut ends,
        1,
        Duration::from_secs(15),
        Duration::from_secs(2),
    )
    .await;
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(got[0].1.contains("DeliveryFailure"), "{}", got[0].1);
    await_known(&a, &id, false).await;
    await_known(&b, &id, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_node_loads_the_subscriptions_from_kv() {
    let nats = nats::NatsServer::start_jetstream("ev-restart");
    let mut a = node(&nats.url()).await;
    let (sink_addr, mut rx) = sink().await;
    let (_, id) = subscribe(&a, sink_addr, None).await;
    a.shutdown().await.unwrap().unwrap();
    drop(a);

    let a = node(&nats.url()).await;
    // Loaded before the server answers its first request.
    let status = manager_op(
        &a,
        "GetStatus",
        &id,
        &format!(r#"<wse:GetStatus xmlns:wse="{WSE}"/>"#),
    )
    .await;
    assert_eq!(status.status, 200, "{}", status.text());
    assert_eq!(publish(&a, &tick(7)).await, 1);
    let got = drain(
        &mut rx,
        1,
        Duration::from_secs(10),
        Duration::from_millis(300),
    )
    .await;
    assert_eq!(ticks(&got), BTreeMap::from([(7, 1)]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_nats_changes_are_refused_delivery_goes_on_and_it_resyncs() {
    let mut nats = nats::NatsServer::start_jetstream("ev-lost");
    let a = node(&nats.url()).await;
    let (sink_addr, mut rx) = sink().await;
    let (_, id) = subscribe(&a, sink_addr, None).await;

    nats.stop();
    // Within a bounded time the node notices and refuses Subscribe with its own fault.
    let deadline = Instant::now() + Duration::from_secs(10);
    let refused = loop {
        let (answer, _) = subscribe(&a, sink_addr, None).await;
        if answer.status != 200 {
            break answer;
        }
        assert!(
            Instant::now() < deadline,
            "Subscribe still accepted without NATS"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    refused.assert_fault(FaultKind::SubscriptionsUnavailable, SOAP);
    assert!(refused.text().contains("NATS"), "{}", refused.text());
    let renew = manager_op(
        &a,
        "Renew",
        &id,
        &format!(r#"<wse:Renew xmlns:wse="{WSE}"/>"#),
    )
    .await;
    renew.assert_fault(FaultKind::SubscriptionsUnavailable, SOAP);
    // Delivery to the known subscriptions goes on (any Subscribe accepted before the node
    // noticed is known too, so count this sink's notifications as at least one).
    assert!(publish(&a, &tick(3)).await >= 1);
    let got = drain(
        &mut rx,
        1,
        Duration::from_secs(10),
        Duration::from_millis(300),
    )
    .await;
    assert!(ticks(&got).get(&3).is_some_and(|n| *n >= 1), "{got:?}");

    nats.start_again();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let renew = manager_op(
            &a,
            "Renew",
            &id,
            &format!(r#"<wse:Renew xmlns:wse="{WSE}"/>"#),
        )
        .await;
        if renew.status == 200 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "never resynchronised: {}",
            renew.text()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (answer, _) = subscribe(&a, sink_addr, None).await;
    assert_eq!(answer.status, 200, "{}", answer.text());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_nats_server_stops_the_start_naming_the_url() {
    let port = nats::free_port();
    let text = format!(
        "[server]\nlisten = \"127.0.0.1:0\"\n[nats]\nurl = \"nats://127.0.0.1:{port}\"\nconnect_timeout_ms = 300\n[[service]]\nname = \"events\"\npath = \"/events\"\nbuiltin = \"event-source\"\nnotify_allow = [\"127.0.0.1\"]\n"
    );
    let config = lather_config::Config::from_toml(&text, "t.toml").unwrap();
    let error = lather_http::Server::bind(&config).await.unwrap_err();
    assert!(
        matches!(error, lather_http::ServeError::NatsUnreachable(_)),
        "{error}"
    );
    assert!(
        error
            .to_string()
            .contains(&format!("nats://127.0.0.1:{port}")),
        "{error}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_nats_server_without_jetstream_stops_the_start_naming_the_bucket() {
    let nats = nats::NatsServer::start("ev-nojs");
    let text = format!(
        "[server]\nlisten = \"127.0.0.1:0\"\n[nats]\nurl = \"{}\"\n[[service]]\nname = \"events\"\npath = \"/events\"\nbuiltin = \"event-source\"\nnotify_allow = [\"127.0.0.1\"]\n",
        nats.url()
    );
    let config = lather_config::Config::from_toml(&text, "t.toml").unwrap();
    let error = tokio::time::timeout(Duration::from_secs(30), lather_http::Server::bind(&config))
        .await
        .expect("bind answers in time")
        .unwrap_err();
    let message = error.to_string();
    assert!(message.contains("lather_events_subscriptions"), "{message}");
    assert!(message.contains(&nats.url()), "{message}");
}
