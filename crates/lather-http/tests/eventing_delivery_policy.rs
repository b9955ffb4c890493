//! The event source's delivery policy against server-side request forgery: NotifyTo and
//! EndTo at loopback, link-local, numeric-IPv4 and the server's own publish path are
//! refused by default and allowed by `notify_allow` (the publish path never); the
//! per-identity subscription quota.

use crate::support;

use lather_envelope::{FaultKind, SoapVersion};
use std::time::Duration;
use support::sink::{next, sink};
use support::{Answer, TestServer, post_with_action as post};

const WSE11: &str = "http://www.w3.org/2011/03/ws-evt";
const WSE04: &str = "http://schemas.xmlsoap.org/ws/2004/08/eventing";
const WSA10: &str = "http://www.w3.org/2005/08/addressing";

/// A server with one event source at `/events` and `extra` keys for it (no `notify_allow`
/// unless `extra` sets it).
async fn source(extra: &str) -> TestServer {
    TestServer::start(&format!(
        "[[service]]\nname = \"events\"\npath = \"/events\"\nbuiltin = \"event-source\"\n{extra}\n"
    ))
    .await
}

async fn subscribe(server: &TestServer, wse: &str, notify: &str, end_to: Option<&str>) -> Answer {
    let end_to = end_to.map_or(String::new(), |a| {
        format!("<wse:EndTo><wsa:Address>{a}</wsa:Address></wse:EndTo>")
    });
    let body = format!(
        r#"<wse:Subscribe xmlns:wse="{wse}" xmlns:wsa="{WSA10}">{end_to}<wse:Delivery><wse:NotifyTo><wsa:Address>{notify}</wsa:Address></wse:NotifyTo></wse:Delivery></wse:Subscribe>"#
    );
    let headers = format!(
        r#"<wsa:Action xmlns:wsa="{WSA10}">{wse}/Subscribe</wsa:Action><wsa:MessageID xmlns:wsa="{WSA10}">urn:uuid:req-1</wsa:MessageID><wsa:To xmlns:wsa="{WSA10}">http://x/events</wsa:To>"#
    );
    post(
        server.addr,
        "/events",
        SoapVersion::V12,
        &format!("{wse}/Subscribe"),
        support::envelope(SoapVersion::V12, &headers, &body),
    )
    .await
}

async fn publish(server: &TestServer) -> Answer {
    let answer = post(
        server.addr,
        "/events/publish",
        SoapVersion::V12,
        "urn:ev/T",
        support::envelope(SoapVersion::V12, "", r#"<ev:T xmlns:ev="urn:ev">1</ev:T>"#),
    )
    .await;
    assert_eq!(answer.status, 200, "{}", answer.text());
    answer
}

fn queued(answer: &Answer) -> usize {
    let text = answer.text();
    let start = text.find("queued=\"").unwrap() + 8;
    text[start..start + text[start..].find('"').unwrap()]
        .parse()
        .unwrap()
}

#[tokio::test]
async fn internal_addresses_are_refused_by_default() {
    let server = source("").await;
    let own_publish = format!("http://{}/events/publish", server.addr);
    for notify in [
        "http://127.0.0.1:9/sink",
        "http://169.254.169.254/latest/meta-data",
        "http://2130706433:80/",
        "http://0x7f.1:80/",
        "http://[::1]:9/sink",
        "http://localhost:9/sink",
        "soap.tcp://127.0.0.1:9",
        "lather.bin://127.1:9",
        own_publish.as_str(),
    ] {
        let answer = subscribe(&server, WSE11, notify, None).await;
        answer.assert_fault(FaultKind::UnusableEpr, SoapVersion::V12);
        assert!(
            answer.text().contains("notify_allow") || answer.text().contains("publish"),
            "{notify}: {}",
            answer.text()
        );
        // The reason names the policy, not resolved internals.
        assert!(answer.text().contains("refused"), "{}", answer.text());
    }
    // 2004/08 has no UnusableEPR: its InvalidMessage; EndTo is checked too.
    let answer = subscribe(
        &server,
        WSE04,
        "http://10.0.0.1:9/sink",
        Some("http://169.254.169.254/end"),
    )
    .await;
    answer.assert_fault(FaultKind::InvalidEventingMessage, SoapVersion::V12);
    assert!(answer.text().contains("EndTo"), "{}", answer.text());
    // Nothing was granted.
    assert_eq!(queued(&publish(&server).await), 0);
}

#[tokio::test]
async fn notify_allow_lets_loopback_sinks_in_but_never_the_own_publish_path() {
    let server = source("notify_allow = [\"127.0.0.1\"]").await;
    let (sink_addr, mut rx) = sink(Duration::ZERO).await;
    let answer = subscribe(&server, WSE11, &format!("http://{sink_addr}/sink"), None).await;
    assert_eq!(answer.status, 200, "{}", answer.text());
    // The decimal form of 127.0.0.1 is read as the address it is.
    let decimal = format!("http://2130706433:{}/sink", sink_addr.port());
    let answer = subscribe(&server, WSE11, &decimal, None).await;
    assert_eq!(answer.status, 200, "{}", answer.text());
    assert_eq!(queued(&publish(&server).await), 2);
    for _ in 0..2 {
        let note = next(&mut rx, Duration::from_secs(10)).await;
        assert!(note.plain().contains("urn:ev"), "{}", note.plain());
    }
    // Two subscriptions on the server's own publish path would loop forever.
    for own in [
        format!("http://{}/events/publish", server.addr),
        format!("http://127.0.0.1:{}/events/publish/", server.addr.port()),
        format!("http://2130706433:{}/events/publish", server.addr.port()),
    ] {
        let answer = subscribe(&server, WSE11, &own, None).await;
        answer.assert_fault(FaultKind::UnusableEpr, SoapVersion::V12);
        assert!(answer.text().contains("publish"), "{}", answer.text());
    }
    // Still refused: another loopback address and link-local.
    for notify in ["http://127.0.0.2:9/x", "http://169.254.169.254/x"] {
        subscribe(&server, WSE11, notify, None)
            .await
            .assert_fault(FaultKind::UnusableEpr, SoapVersion::V12);
    }
}

#[tokio::test]
async fn notify_schemes_restricts_the_bindings() {
    let server = source("notify_allow = [\"127.0.0.1\"]\nnotify_schemes = [\"http\"]").await;
    let answer = subscribe(&server, WSE11, "soap.tcp://127.0.0.1:9", None).await;
    answer.assert_fault(FaultKind::UnusableEpr, SoapVersion::V12);
    assert!(
        answer.text().contains("notify_schemes"),
        "{}",
        answer.text()
    );
}

#[tokio::test]
async fn one_subscriber_gets_at_most_its_quota() {
    let server = source("notify_allow = [\"127.0.0.1\"]\nmax_subscriptions_per_identity = 3").await;
    let (sink_addr, _rx) = sink(Duration::ZERO).await;
    let notify = format!("http://{sink_addr}/sink");
    for _ in 0..3 {
        let answer = subscribe(&server, WSE11, &notify, None).await;
        assert_eq!(answer.status, 200, "{}", answer.text());
    }
    let answer = subscribe(&server, WSE11, &notify, None).await;
    assert!(answer.envelope().is_fault(), "{}", answer.text());
    assert!(
        answer.text().contains("max_subscriptions_per_identity"),
        "{}",
        answer.text()
    );
    assert_eq!(queued(&publish(&server).await), 3);
}

#[tokio::test]
async fn a_bad_notify_allow_entry_names_its_line() {
    let text = "[server]\nlisten = \"127.0.0.1:0\"\n[[service]]\nname = \"events\"\npath = \"/events\"\nbuiltin = \"event-source\"\nnotify_allow = [\n  \"127.0.0.1\",\n  \"10.0.0.0/99\",\n]\n";
    let config = lather_config::Config::from_toml(text, "test.toml").unwrap();
    let error = lather_http::Server::bind(&config).await.unwrap_err();
    let message = error.to_string();
    assert!(message.contains("test.toml:9:"), "{message}");
    assert!(message.contains("notify_allow"), "{message}");
}
