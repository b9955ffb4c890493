//! The eventing handler over real HTTP: a service whose request flow holds a `publish`
//! handler hands each request's Body, as an event, to an event source of the same server;
//! subscribers of that source receive one notification per request, with the configured
//! action and topic, and a slow subscriber does not delay the requests.

use crate::support;

use bytes::Bytes;
use http::Request;
use http_body_util::Full;
use lather_envelope::{FaultKind, QName, SoapVersion};
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use support::sink::{next, nothing, sink};
use support::{Answer, TestServer, send};

const WSE11: &str = "http://www.w3.org/2011/03/ws-evt";
const WSA10: &str = "http://www.w3.org/2005/08/addressing";
const TOPIC: &str = "urn:lather:eventing:topic";
const SOAP: SoapVersion = SoapVersion::V12;

/// Three services feeding one event source: `orders` publishes with a fixed action and the
/// topic `alarms`; `readings` publishes with the request's own action; `slow` publishes as a
/// oneway handler.
const CONFIG: &str = r#"
[handlers.to-events]
kind = "publish"
source = "events"
action = "urn:ev/OrderPlaced"
topic = "alarms ward-3"

[handlers.own-action]
kind = "publish"
source = "events"

[handlers.fire-and-forget]
kind = "publish"
source = "events"
oneway = true

[[service]]
name = "events"
path = "/events"
builtin = "event-source"
notify_allow = ["127.0.0.1"]
event_action = "urn:ev/Default"

[[service]]
name = "orders"
path = "/orders"
builtin = "echo"
request = [["to-events"]]

[[service]]
name = "readings"
path = "/readings"
builtin = "echo"
request = [["own-action"]]

[[service]]
name = "slow"
path = "/slow"
builtin = "echo"
request = [["fire-and-forget"]]
"#;

/// POSTs an envelope with `payload` in its Body to `path`; `action` (if any) as the SOAP
/// 1.2 `action` parameter.
async fn call(server: &TestServer, path: &str, action: Option<&str>, payload: &str) -> Answer {
    post(server, path, action, support::envelope(SOAP, "", payload)).await
}

async fn post(server: &TestServer, path: &str, action: Option<&str>, envelope: String) -> Answer {
    let content_type = match action {
        Some(a) => format!("application/soap+xml; charset=utf-8; action=\"{a}\""),
        None => "application/soap+xml; charset=utf-8".to_owned(),
    };
    let request = Request::post(server.url(path))
        .header("host", server.addr.to_string())
        .header("content-type", content_type)
        .body(Full::new(Bytes::from(envelope)))
        .unwrap();
    send(server.addr, request).await
}

/// Subscribes the sink at `notify` to the source (WS-Eventing 2011), with `filter` XML.
async fn subscribe(server: &TestServer, notify: SocketAddr, filter: &str) {
    let headers = format!(
        r#"<wsa:Action xmlns:wsa="{WSA10}">{WSE11}/Subscribe</wsa:Action><wsa:MessageID xmlns:wsa="{WSA10}">urn:uuid:sub-1</wsa:MessageID><wsa:To xmlns:wsa="{WSA10}">{}</wsa:To>"#,
        server.url("/events")
    );
    let body = format!(
        r#"<wse:Subscribe xmlns:wse="{WSE11}" xmlns:wsa="{WSA10}"><wse:Delivery><wse:NotifyTo><wsa:Address>http://{notify}/sink</wsa:Address></wse:NotifyTo></wse:Delivery>{filter}</wse:Subscribe>"#
    );
    let action = format!("{WSE11}/Subscribe");
    let answer = post(
        server,
        "/events",
        Some(&action),
        support::envelope(SOAP, &headers, &body),
    )
    .await;
    assert_eq!(answer.status, 200, "{}", answer.text());
    assert!(
        answer.text().contains("SubscribeResponse"),
        "{}",
        answer.text()
    );
}

fn action_of(received: &support::sink::Received) -> Option<String> {
    let env = received.envelope();
    env.header(&QName::new(WSA10, "Action"))
        .and_then(|b| env.header_text(b))
}

fn order(n: u32) -> String {
    format!(
        r#"<o:Order xmlns:o="urn:shop"><o:Id>{n}</o:Id><o:Item>tea &amp; cake</o:Item></o:Order>"#
    )
}

#[tokio::test]
async fn each_request_reaches_the_subscribers_as_one_event_with_the_configured_action() {
    let server = TestServer::start(CONFIG).await;
    let (addr, mut rx) = sink(Duration::ZERO).await;
    subscribe(&server, addr, "").await;
    for n in 1..=3 {
        let answer = call(&server, "/orders", Some("urn:shop/Place"), &order(n)).await;
        // The service answers as it would without the handler: the message is unchanged.
        assert_eq!(answer.status, 200, "{}", answer.text());
        assert!(
            answer.text().contains(&format!("<o:Id>{n}</o:Id>")),
            "{}",
            answer.text()
        );
    }
    for n in 1..=3 {
        let got = next(&mut rx, Duration::from_secs(5)).await;
        assert_eq!(got.path, "/sink");
        let env = got.envelope();
        assert_eq!(env.operation(), Some(&QName::new("urn:shop", "Order")));
        let event = String::from_utf8(env.extract_payload().unwrap().to_vec()).unwrap();
        assert!(event.contains(&format!("<o:Id>{n}</o:Id>")), "{event}");
        assert!(event.contains("tea &amp; cake"), "{event}");
        assert_eq!(action_of(&got).as_deref(), Some("urn:ev/OrderPlaced"));
    }
    nothing(&mut rx, Duration::from_millis(300)).await;
}

#[tokio::test]
async fn the_action_defaults_to_the_requests_then_the_sources() {
    let server = TestServer::start(CONFIG).await;
    let (addr, mut rx) = sink(Duration::ZERO).await;
    subscribe(&server, addr, "").await;
    let reading = r#"<r:Temp xmlns:r="urn:ward">21.5</r:Temp>"#;
    assert_eq!(
        call(&server, "/readings", Some("urn:ward/Temp"), reading)
            .await
            .status,
        200
    );
    let got = next(&mut rx, Duration::from_secs(5)).await;
    assert_eq!(action_of(&got).as_deref(), Some("urn:ward/Temp"));
    assert_eq!(call(&server, "/readings", None, reading).await.status, 200);
    let got = next(&mut rx, Duration::from_secs(5)).await;
    assert_eq!(action_of(&got).as_deref(), Some("urn:ev/Default"));
}

#[tokio::test]
async fn topic_filters_see_the_root_name_and_the_configured_topic() {
    let server = TestServer::start(CONFIG).await;
    let (alarm_addr, mut alarms) = sink(Duration::ZERO).await;
    let (temp_addr, mut temps) = sink(Duration::ZERO).await;
    subscribe(
        &server,
        alarm_addr,
        &format!(r#"<wse:Filter Dialect="{TOPIC}">alarms</wse:Filter>"#),
    )
    .await;
    subscribe(
        &server,
        temp_addr,
        &format!(r#"<wse:Filter Dialect="{TOPIC}" xmlns:r="urn:ward">r:Temp</wse:Filter>"#),
    )
    .await;
    let reading = r#"<r:Temp xmlns:r="urn:ward">21.5</r:Temp>"#;
    // readings carries no topic: only its root name (r:Temp) picks it.
    assert_eq!(
        call(&server, "/readings", Some("urn:ward/Temp"), reading)
            .await
            .status,
        200
    );
    let got = next(&mut temps, Duration::from_secs(5)).await;
    assert_eq!(
        got.envelope().operation(),
        Some(&QName::new("urn:ward", "Temp"))
    );
    nothing(&mut alarms, Duration::from_millis(300)).await;
    // orders carries the topic "alarms": the alarm subscriber gets it, the other does not.
    assert_eq!(call(&server, "/orders", None, &order(7)).await.status, 200);
    let got = next(&mut alarms, Duration::from_secs(5)).await;
    assert_eq!(
        got.envelope().operation(),
        Some(&QName::new("urn:shop", "Order"))
    );
    nothing(&mut temps, Duration::from_millis(300)).await;
}

#[tokio::test]
async fn a_slow_subscriber_does_not_delay_the_requests() {
    let server = TestServer::start(CONFIG).await;
    let delay = Duration::from_millis(1500);
    let (slow_addr, mut slow) = sink(delay).await;
    let (fast_addr, mut fast) = sink(Duration::ZERO).await;
    subscribe(&server, slow_addr, "").await;
    subscribe(&server, fast_addr, "").await;
    let started = Instant::now();
    for n in 1..=3 {
        assert_eq!(call(&server, "/slow", None, &order(n)).await.status, 200);
    }
    // Three deliveries to the slow sink take 4.5 s in a row; the requests do not wait.
    let elapsed = started.elapsed();
    assert!(elapsed < delay, "requests took {elapsed:?}");
    for _ in 1..=3 {
        next(&mut fast, Duration::from_secs(5)).await;
    }
    assert!(
        started.elapsed() < delay,
        "the fast sink waited on the slow one"
    );
    for _ in 1..=3 {
        next(&mut slow, Duration::from_secs(10)).await;
    }
}

#[tokio::test]
async fn a_request_with_an_empty_body_is_refused() {
    let server = TestServer::start(CONFIG).await;
    let answer = call(&server, "/orders", None, "").await;
    answer.assert_fault(FaultKind::NoEventToPublish, SOAP);
}
