//! Interoperability with an implementation of WS-Eventing no one here wrote: the Python
//! `sdc11073` package (IEEE 11073 SDC: WS-Eventing 2004/08, WS-Addressing 1.0, SOAP 1.2),
//! driven by `interop/sdc_peer.py`.
//!
//! (a) lather serves an event source; sdc11073's consumer subscribes (DPWS action filter,
//!     a reference parameter on NotifyTo), lather publishes N events, sdc11073 reads and
//!     schema-validates each, then sends GetStatus, Renew and Unsubscribe.
//! (b) sdc11073's subscription manager is the source; `lather subscribe` (and the library
//!     client, with Renew and GetStatus) subscribe to it and receive its N events.
//!
//! The peer's python comes from `LATHER_INTEROP_PYTHON` (set by `.ci/run`), else the default
//! venv of `interop/setup.sh`; without either the tests fail saying how to install it.

use crate::interop;
use lather_eventing::Version;
use lather_eventing::client::{EventingClient, Filter, Sink, SinkMessage, SubscribeOptions};

use interop::{Running, publish, serve_event_source};
use serde_json::Value;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

const EVENTS: usize = 5;
const ACTION: &str = "http://standards.ieee.org/downloads/11073/11073-20701-2018/StateEventService/EpisodicMetricReport";
const MSG_NS: &str = "http://standards.ieee.org/downloads/11073/11073-10207-2017/message";
const PM_NS: &str = "http://standards.ieee.org/downloads/11073/11073-10207-2017/participant";

fn repo() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

/// The python of the venv holding the pinned sdc11073, or a failure saying how to get it.
fn python() -> PathBuf {
    let from_env = std::env::var_os("LATHER_INTEROP_PYTHON").map(PathBuf::from);
    let default = std::env::var_os("HOME")
        .map(|h| PathBuf::from(h).join(".cache/lather-interop/venv/bin/python"));
    for candidate in from_env.iter().chain(default.iter()) {
        let ok = Command::new(candidate)
            .args(["-c", "import sdc11073"])
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if ok {
            return candidate.clone();
        }
    }
    panic!(
        "the interop peer sdc11073 is not installed (tried LATHER_INTEROP_PYTHON={from_env:?} and \
         {default:?}); install it with: export LATHER_INTEROP_PYTHON=\"$(bash interop/setup.sh)\""
    );
}

/// The peer in `role`, with a channel of the JSON lines it prints.
fn peer(args: &[&str]) -> (Running, mpsc::Receiver<Value>) {
    let mut child = Command::new(python())
        .arg(repo().join("interop/sdc_peer.py"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start the sdc11073 peer");
    let rx = interop::json_lines(child.stdout.take().unwrap());
    (Running(child), rx)
}

fn line(rx: &mpsc::Receiver<Value>, what: &str) -> Value {
    interop::next_line(rx, "sdc11073", what, Duration::from_secs(30))
}

/// The i-th event: a BICEPS EpisodicMetricReport (the peer validates it against the SDC
/// schemas).
fn report(i: usize) -> String {
    format!(
        r#"<msg:EpisodicMetricReport xmlns:msg="{MSG_NS}" xmlns:pm="{PM_NS}" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" MdibVersion="{i}" SequenceId="urn:uuid:00000000-0000-4000-8000-000000000001"><msg:ReportPart><msg:MetricState xsi:type="pm:NumericMetricState" DescriptorHandle="m{i}"><pm:MetricValue Value="{i}"><pm:MetricQuality Validity="Vld"/></pm:MetricValue></msg:MetricState></msg:ReportPart></msg:EpisodicMetricReport>"#
    )
}

#[test]
fn the_sdc11073_consumer_subscribes_to_lather_and_receives_every_event() {
    let (_lather, port) = serve_event_source("interop-sdc");
    let source = format!("http://127.0.0.1:{port}/events");
    let (_peer, rx) = peer(&[
        "consumer",
        "--source",
        &source,
        "--count",
        "5",
        "--timeout",
        "20",
    ]);
    let ready = line(&rx, "ready");
    let identifier = ready["identifier"].as_str().unwrap().to_owned();
    assert_eq!(ready["manager"].as_str(), Some(source.as_str()), "{ready}");
    assert_eq!(ready["granted_expires"].as_f64(), Some(600.0), "{ready}");

    for i in 1..=EVENTS {
        assert_eq!(
            publish(port, ACTION, &report(i)),
            1,
            "event {i} queued for the peer"
        );
    }
    // The peer's DPWS action filter keeps other actions away.
    let other = ACTION.replace("EpisodicMetricReport", "EpisodicAlertReport");
    assert_eq!(publish(port, &other, &report(99)), 0);

    let done = line(&rx, "result");
    assert_eq!(done["all_received"], Value::Bool(true), "{done}");
    let events = done["events"].as_array().unwrap();
    assert_eq!(events.len(), EVENTS, "{done}");
    for (n, event) in events.iter().enumerate() {
        let i = n + 1;
        assert_eq!(event["action"].as_str(), Some(ACTION), "{event}");
        assert_eq!(event["to"].as_str(), ready["notify_to"].as_str(), "{event}");
        assert_eq!(event["mdib_version"].as_u64(), Some(i as u64), "{event}");
        let body = event["body"].as_str().unwrap();
        assert!(
            body.contains(&format!(r#"<pm:MetricValue Value="{i}">"#)),
            "{body}"
        );
        let params = event["reference_parameters"].as_array().unwrap();
        assert_eq!(params.len(), 1, "{event}");
        assert_eq!(params[0]["namespace"].as_str(), Some("http.local.com"));
        assert_eq!(params[0]["name"].as_str(), Some("MyClIdentifier"));
        assert_eq!(params[0]["text"].as_str(), Some(identifier.as_str()));
    }
    // GetStatus and Renew reached lather through the manager EPR's reference parameter.
    let status = done["get_status"].as_f64().unwrap();
    assert!(status > 500.0 && status <= 600.0, "{done}");
    assert_eq!(done["renew"].as_f64(), Some(300.0), "{done}");
    assert_eq!(done["unsubscribed"], Value::Bool(true), "{done}");
    // lather forgot the subscription on the peer's Unsubscribe.
    assert_eq!(publish(port, ACTION, &report(EVENTS + 1)), 0);
}

#[test]
fn lather_subscribe_receives_the_events_of_the_sdc11073_source() {
    let (_peer, rx) = peer(&["source", "--count", "5", "--timeout", "20"]);
    let started = line(&rx, "source");
    let source = started["source"].as_str().unwrap().to_owned();
    let out = Command::new(env!("CARGO_BIN_EXE_lather"))
        .args(["subscribe", "--source", &source, "--filter-action", ACTION])
        .args(["--count", "5", "--timeout-s", "20", "--json"])
        .output()
        .expect("run lather subscribe");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let lines: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), EVENTS, "{stdout}");
    for (n, notification) in lines.iter().enumerate() {
        let i = n + 1;
        assert_eq!(notification["action"].as_str(), Some(ACTION));
        let body = notification["body"].as_str().unwrap();
        assert!(body.contains(&format!(r#"MdibVersion="{i}""#)), "{body}");
        assert!(body.contains(&format!(r#"Value="{i}""#)), "{body}");
    }
    assert!(
        stderr.contains("unsubscribed after 5 notification(s)"),
        "{stderr}"
    );

    let done = line(&rx, "result");
    assert_eq!(
        done["requests"],
        serde_json::json!(["Subscribe", "Unsubscribe"]),
        "{done}"
    );
    assert_eq!(done["unsubscribed"], Value::Bool(true), "{done}");
    assert_eq!(done["delivery_errors"].as_u64(), Some(0), "{done}");
    assert_eq!(done["filter"].as_str(), Some(ACTION), "{done}");
}

#[test]
fn the_client_renews_and_asks_the_status_at_the_sdc11073_source() {
    let (_peer, rx) = peer(&["source", "--count", "3", "--timeout", "20"]);
    let started = line(&rx, "source");
    let source = started["source"].as_str().unwrap().to_owned();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut sink = Sink::bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
        let client = EventingClient::default();
        let mut options = SubscribeOptions::new(Version::Submission04Wsa10, sink.notify_url());
        options.notify_to.params =
            vec![r#"<app:Key xmlns:app="urn:lather:test">k-7</app:Key>"#.to_owned()];
        options.expires = Some("PT10M".into());
        options.filter = Some(Filter::actions([ACTION]));
        let mut subscription = client.subscribe(&source, &options).await.unwrap();
        // sdc11073 states durations in seconds.
        assert_eq!(subscription.expires.as_deref(), Some("PT10M"));
        assert_eq!(subscription.manager.params.len(), 1, "{subscription:?}");
        assert!(subscription.manager.params[0].contains("MyDevIdentifier"));
        let status = client.get_status(&subscription).await.unwrap();
        assert!(
            status.is_some_and(|s| s.starts_with("PT")),
            "{subscription:?}"
        );
        let granted = client.renew(&mut subscription, Some("PT5M")).await.unwrap();
        assert_eq!(granted.as_deref(), Some("PT5M"));
        for i in 1..=3 {
            let message = tokio::time::timeout(Duration::from_secs(20), sink.next())
                .await
                .expect("a notification in time");
            let Some(SinkMessage::Notification(n)) = message else {
                panic!("{message:?}")
            };
            assert_eq!(n.action.as_deref(), Some(ACTION));
            assert!(
                n.body.contains(&format!(r#"MdibVersion="{i}""#)),
                "{}",
                n.body
            );
            // The NotifyTo reference parameter came back, marked as WS-Addressing 1.0 asks.
            assert_eq!(n.reference_parameters.len(), 1, "{n:?}");
            assert!(
                n.reference_parameters[0].contains(">k-7</app:Key>"),
                "{n:?}"
            );
            assert!(n.reference_parameters[0].contains("IsReferenceParameter=\"true\""));
        }
        client.unsubscribe(&subscription).await.unwrap();
    });
    let done = line(&rx, "result");
    assert_eq!(
        done["requests"],
        serde_json::json!(["Subscribe", "GetStatus", "Renew", "Unsubscribe"]),
        "{done}"
    );
    assert_eq!(done["unsubscribed"], Value::Bool(true), "{done}");
}
