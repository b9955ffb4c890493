//! `/metrics` of a real server on loopback: requests labelled by operation with the cap
//! `metrics_max_operations` (further names count as `other`, operations a service does not
//! serve as `unknown`), the build, and the event sources' subscriptions and sink queues.

use crate::support;

use lather_envelope::{FaultKind, SoapVersion};
use std::collections::BTreeMap;
use support::{TestServer, envelope, get, metric, post, post_with_action};
use tokio::net::TcpListener;

/// The value of each `operation` label of `name` series whose labels begin with `labels`.
fn by_operation(text: &str, name: &str, labels: &str) -> BTreeMap<String, f64> {
    let prefix = format!("{name}{{{labels},");
    text.lines()
        .filter_map(|l| l.strip_prefix(&prefix))
        .filter_map(|rest| {
            let (op, value) = rest.split_once("operation=\"")?.1.split_once('"')?;
            let value = value.rsplit(' ').next()?.parse().ok()?;
            Some((op.to_owned(), value))
        })
        .collect()
}

#[tokio::test]
async fn operations_beyond_the_cap_are_counted_as_other() {
    let server = TestServer::start(
        "[server]\nlisten = \"127.0.0.1:0\"\nmetrics_max_operations = 50\n\
         [[service]]\nname = \"echo\"\npath = \"/echo\"\nbuiltin = \"echo\"\n",
    )
    .await;
    // Echo answers any operation: 60 distinct names, then the first again.
    for i in (0..60).chain([0]) {
        let payload = format!(r#"<t:op{i} xmlns:t="urn:t"><x>{i}</x></t:op{i}>"#);
        let body = envelope(SoapVersion::V11, "", &payload);
        let answer = post(server.addr, "/echo", SoapVersion::V11, body).await;
        assert_eq!(answer.status, 200, "{}", answer.text());
    }
    let text = get(server.addr, "/metrics").await.text().to_owned();
    let ok = by_operation(
        &text,
        "lather_requests_total",
        r#"service="echo",code="200""#,
    );
    let named: Vec<&String> = ok.keys().filter(|op| op.starts_with("op")).collect();
    assert_eq!(named.len(), 50, "{ok:?}");
    // The names seen first kept their labels; the ten after the cap are one series.
    assert_eq!(ok.get("op0"), Some(&2.0), "{ok:?}");
    assert_eq!(ok.get("op49"), Some(&1.0), "{ok:?}");
    assert_eq!(ok.get("op50"), None, "{ok:?}");
    assert_eq!(ok.get("other"), Some(&10.0), "{ok:?}");
    assert_eq!(ok.values().sum::<f64>(), 61.0, "{ok:?}");
    // The histogram and byte counters carry the same labels, no more.
    for name in [
        "lather_request_duration_seconds_count",
        "lather_request_bytes_total",
        "lather_response_bytes_total",
    ] {
        let labels = by_operation(&text, name, r#"service="echo""#);
        assert_eq!(labels.len(), 50 + 2, "{name}: {labels:?}"); // + "other" and "-"
        assert!(labels.contains_key("other") && labels.contains_key("-"));
    }
    let latency = by_operation(
        &text,
        "lather_request_duration_seconds_count",
        r#"service="echo""#,
    );
    assert_eq!(latency.get("other"), Some(&10.0));
    assert!(!text.contains("op55"), "{text}");
}

#[tokio::test]
async fn an_operation_the_service_does_not_serve_is_unknown_and_requests_without_one_are_dash() {
    // The context store names its operations: others are answered with UnknownOperation.
    let server = TestServer::start(
        "[[service]]\nname = \"ctx\"\npath = \"/ctx\"\nbuiltin = \"context-store\"\n",
    )
    .await;
    for i in 0..3 {
        let payload = format!(r#"<t:bogus{i} xmlns:t="urn:t"/>"#);
        let body = envelope(SoapVersion::V12, "", &payload);
        let answer = post(server.addr, "/ctx", SoapVersion::V12, body).await;
        answer.assert_fault(FaultKind::UnknownOperation, SoapVersion::V12);
    }
    // A request whose envelope is never read (wrong method) has no operation.
    let wrong = support::send(
        server.addr,
        http::Request::put(server.url("/ctx"))
            .header("host", server.addr.to_string())
            .body(http_body_util::Full::new(bytes::Bytes::new()))
            .unwrap(),
    )
    .await;
    assert!(
        wrong.text().contains("MethodNotAllowed"),
        "{}",
        wrong.text()
    );
    let text = get(server.addr, "/metrics").await.text().to_owned();
    let faults = by_operation(
        &text,
        "lather_faults_total",
        r#"service="ctx",fault="UnknownOperation""#,
    );
    assert_eq!(faults, BTreeMap::from([("unknown".to_owned(), 3.0)]));
    let refused = by_operation(
        &text,
        "lather_faults_total",
        r#"service="ctx",fault="MethodNotAllowed""#,
    );
    assert_eq!(refused, BTreeMap::from([("-".to_owned(), 1.0)]));
    assert!(!text.contains("bogus"), "{text}");
}

#[tokio::test]
async fn the_build_is_one_series_at_1_with_the_crate_version() {
    let server = TestServer::echo().await;
    let text = get(server.addr, "/metrics").await.text().to_owned();
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("lather_build_info"))
        .collect();
    assert_eq!(lines.len(), 1, "{text}");
    let version = format!(
        "lather_build_info{{version=\"{}\"",
        env!("CARGO_PKG_VERSION")
    );
    assert!(lines[0].starts_with(&version), "{}", lines[0]);
    assert!(lines[0].ends_with("} 1"), "{}", lines[0]);
    assert!(text.contains("# TYPE lather_build_info gauge"), "{text}");
}

#[tokio::test]
async fn an_event_source_shows_its_subscriptions_and_its_fullest_sink() {
    let server = support::event_source("").await;
    // A sink that accepts and never reads nor answers: what is sent to it stays queued.
    let mute = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let mute_addr = mute.local_addr().unwrap();
    let held = tokio::spawn(async move {
        let mut kept = Vec::new();
        while let Ok((s, _)) = mute.accept().await {
            kept.push(s);
        }
    });
    let scrape = || async { get(server.addr, "/metrics").await.text().to_owned() };
    let before = scrape().await;
    assert_eq!(
        metric(
            &before,
            r#"lather_eventing_subscriptions{service="events"}"#
        ),
        Some(0.0),
        "{before}"
    );
    let soap = SoapVersion::V12;
    for _ in 0..2 {
        support::subscribe_events(server.addr, &format!("http://{mute_addr}/n")).await;
    }
    let event = r#"<e:Tick xmlns:e="urn:e"><n>1</n></e:Tick>"#;
    for _ in 0..4 {
        let answer = post_with_action(
            server.addr,
            "/events/publish",
            soap,
            "urn:e:Tick",
            envelope(soap, "", event),
        )
        .await;
        assert!(answer.text().contains(r#"queued="2""#), "{}", answer.text());
    }
    let text = scrape().await;
    let value = |name: &str| {
        metric(&text, &format!("{name}{{service=\"events\"}}"))
            .unwrap_or_else(|| panic!("no {name}: {text}"))
    };
    assert_eq!(value("lather_eventing_subscriptions"), 2.0);
    // The mute sinks hold every notification, queued or being written: 4 each.
    assert_eq!(value("lather_eventing_sink_queue_max_notifications"), 4.0);
    assert_eq!(value("lather_eventing_queued_notifications"), 8.0);
    // A sink holds the four events' bytes (queued or being written); the source holds
    // each event once, so both figures are the same.
    let sink_bytes = value("lather_eventing_sink_queue_max_bytes");
    assert!(sink_bytes > 4.0 * event.len() as f64 / 2.0, "{text}");
    assert_eq!(sink_bytes, value("lather_eventing_queued_bytes"), "{text}");
    held.abort();
}
