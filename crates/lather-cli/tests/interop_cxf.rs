//! Interoperability over W3C WS-Eventing 2011 (`http://www.w3.org/2011/03/ws-evt`,
//! WS-Addressing 1.0) with an implementation no one here wrote: Apache CXF's
//! `cxf-rt-ws-eventing`, driven by the peer in `interop/cxf` (SOAP 1.1, JAX-WS + JAXB).
//!
//! (a) lather serves an event source; CXF's JAX-WS clients subscribe (NotifyTo = a CXF
//!     event-sink endpoint with a reference parameter, unwrapped format), lather publishes N
//!     events, CXF unmarshals each into its JAXB event class, then GetStatus, Renew and
//!     Unsubscribe go to lather's manager through CXF's reference-parameter handler; an
//!     XPath filter CXF writes selects the events.
//! (b) CXF's event source, subscription manager and notificator are the source;
//!     `lather_eventing::client` (and `lather subscribe --version 2011 --soap 1.1`) subscribe to it,
//!     receive its N events, renew, ask the status, unsubscribe, and take its SubscriptionEnd.
//!
//! The peer's jar comes from `LATHER_INTEROP_CXF` (set by `.ci/run`); without it the tests
//! fail saying how to build it.

use crate::interop;
use lather_envelope::SoapVersion;
use lather_eventing::client::{EventingClient, Sink, SinkMessage, SubscribeOptions};
use lather_eventing::{Endpoint, LATHER_EVENTING_NS, Version};

use interop::{Running, publish, serve_event_source};
use serde_json::Value;
use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

const EVENTS: usize = 5;
/// The peer's event namespace and its Temperature notification action
/// (interop/cxf/src/main/java/org/lather/interop/cxf/EventSink.java).
const EVENT_NS: &str = "urn:lather:interop:cxf";
const ACTION: &str = "urn:lather:interop:cxf/Temperature";
const SOAP11_NS: &str = "http://schemas.xmlsoap.org/soap/envelope/";
const WSE11: &str = "http://www.w3.org/2011/03/ws-evt";
/// Where CXF's subscription manager keeps the subscription id (its default).
const CXF_ID_NS: &str = "http://cxf.apache.org/ws-eventing";

/// The peer's runnable jar, or a failure saying how to build it.
fn peer_jar() -> PathBuf {
    const HOW: &str = "build it with: export LATHER_INTEROP_CXF=\"$(bash interop/cxf/setup.sh)\" (needs java 17 and maven)";
    let Some(jar) = std::env::var_os("LATHER_INTEROP_CXF").map(PathBuf::from) else {
        panic!("the CXF interop peer is not configured (LATHER_INTEROP_CXF is unset); {HOW}");
    };
    assert!(
        jar.is_file(),
        "LATHER_INTEROP_CXF={jar:?} is not a file; {HOW}"
    );
    let java = Command::new("java")
        .arg("-version")
        .stderr(Stdio::null())
        .status();
    assert!(
        java.is_ok_and(|s| s.success()),
        "`java` (17+) is not on PATH; the CXF peer runs on it"
    );
    jar
}

/// The CXF peer with `args`: the process, its stdin and the JSON lines it prints.
fn peer(args: &[&str]) -> (Running, ChildStdin, mpsc::Receiver<Value>) {
    let mut child = Command::new("java")
        .arg("-jar")
        .arg(peer_jar())
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start the CXF peer");
    let stdin = child.stdin.take().unwrap();
    let rx = interop::json_lines(child.stdout.take().unwrap());
    (Running(child), stdin, rx)
}

/// The peer's next line (the JVM and CXF start slowly on a loaded machine: 60 s).
fn line(rx: &mpsc::Receiver<Value>, what: &str) -> Value {
    interop::next_line(rx, "CXF", what, Duration::from_secs(60))
}

/// Sends `command` to the source peer and returns its answer.
fn command(stdin: &mut ChildStdin, rx: &mpsc::Receiver<Value>, command: &str) -> Value {
    writeln!(stdin, "{command}").unwrap();
    stdin.flush().unwrap();
    line(rx, command)
}

/// The i-th event, as the peer's JAXB class `TemperatureEvent` reads it.
fn temperature(i: usize) -> String {
    format!(
        r#"<ev:Temperature xmlns:ev="{EVENT_NS}"><ev:sensor>s-{i}</ev:sensor><ev:celsius>{}</ev:celsius></ev:Temperature>"#,
        i * 10 + 1
    )
}

#[test]
fn the_cxf_consumer_subscribes_to_lather_and_receives_every_event() {
    let (_lather, port) = serve_event_source("interop-cxf");
    let source = format!("http://127.0.0.1:{port}/events");
    let (_peer, _stdin, rx) = peer(&[
        "consumer",
        "--source",
        &source,
        "--events",
        &EVENTS.to_string(),
        "--timeout",
        "30",
    ]);
    let ready = line(&rx, "ready");
    assert_eq!(ready["manager"].as_str(), Some(source.as_str()), "{ready}");
    // Asked without BestEffort: exactly what was asked (PT10M) is granted, as a duration
    // (lather states it in seconds).
    assert_eq!(ready["granted_expires"].as_str(), Some("PT600S"), "{ready}");
    // The manager EPR's reference parameter: lather's Identifier (2011 leaves its name to
    // the source), read by CXF's JAXB as one element.
    let params = ready["manager_parameters"].as_array().unwrap();
    assert_eq!(params.len(), 1, "{ready}");
    assert_eq!(params[0]["namespace"].as_str(), Some(LATHER_EVENTING_NS));
    assert_eq!(params[0]["name"].as_str(), Some("Identifier"));
    assert!(
        params[0]["text"].as_str().is_some_and(|t| !t.is_empty()),
        "{ready}"
    );
    let key = ready["key"].as_str().unwrap().to_owned();

    for i in 1..=EVENTS {
        assert_eq!(publish(port, ACTION, &temperature(i)), 1, "event {i}");
    }
    for i in 1..=EVENTS {
        let event = &line(&rx, "event")["event"];
        // CXF's JAXB read the event's fields; lather keeps one subscription's order.
        assert_eq!(event["sensor"].as_str(), Some(format!("s-{i}").as_str()));
        assert_eq!(
            event["celsius"].as_u64(),
            Some(i as u64 * 10 + 1),
            "{event}"
        );
        assert_eq!(event["Action"].as_str(), Some(ACTION), "{event}");
        assert_eq!(event["To"].as_str(), ready["notify_to"].as_str(), "{event}");
        assert!(
            event["MessageID"]
                .as_str()
                .is_some_and(|id| id.starts_with("urn:uuid:")),
            "{event}"
        );
        // The subscriber spoke SOAP 1.1, so its notifications are SOAP 1.1.
        assert_eq!(event["soap_ns"].as_str(), Some(SOAP11_NS), "{event}");
        // The NotifyTo reference parameter came back as a header block, marked as
        // WS-Addressing 1.0 section 3.3 asks.
        let keys: Vec<&Value> = event["headers"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|h| h["name"] == "SinkKey")
            .collect();
        assert_eq!(keys.len(), 1, "{event}");
        assert_eq!(
            keys[0]["namespace"].as_str(),
            Some("urn:lather:interop:cxf:sink")
        );
        assert_eq!(keys[0]["text"].as_str(), Some(key.as_str()), "{event}");
        assert_eq!(keys[0]["is_reference_parameter"].as_str(), Some("true"));
    }

    let done = line(&rx, "result");
    assert_eq!(done["events"].as_u64(), Some(EVENTS as u64), "{done}");
    // GetStatus states an expiration; Renew (PT5M, no BestEffort) is granted as asked
    // (in seconds).
    assert!(done["get_status"].as_str().is_some(), "{done}");
    assert_eq!(done["renew"].as_str(), Some("PT300S"), "{done}");
    assert!(done["get_status_after_renew"].as_str().is_some(), "{done}");
    assert_eq!(done["unsubscribed"], Value::Bool(true), "{done}");
    // After Unsubscribe the manager answers GetStatus with the 2011 UnknownSubscription
    // fault, which CXF reads.
    let fault = done["fault_after_unsubscribe"].as_str().unwrap_or_default();
    assert!(fault.contains("UnknownSubscription"), "{done}");
    assert!(done["late_event"].is_null(), "{done}");
    // CXF's request for a subscription that does not expire (PT0S, as CXF writes it, with
    // BestEffort) is granted lather's maximum.
    assert_eq!(
        done["non_expiring_granted"].as_str(),
        Some("PT900S"),
        "{done}"
    );
    // lather forgot the subscription on CXF's Unsubscribe.
    assert_eq!(publish(port, ACTION, &temperature(EVENTS + 1)), 0);
}

#[test]
fn the_xpath_filter_cxf_writes_selects_the_events_lather_sends() {
    let (_lather, port) = serve_event_source("interop-cxf");
    let source = format!("http://127.0.0.1:{port}/events");
    // No prefixes: CXF's JAXB declares none for the expression on the Filter element.
    let filter = "*[local-name()='celsius'] > 25";
    let (_peer, _stdin, rx) = peer(&[
        "consumer",
        "--source",
        &source,
        "--events",
        "3",
        "--timeout",
        "30",
        "--filter",
        filter,
    ]);
    line(&rx, "ready");
    // celsius 11, 21, 31, 41, 51: the first two do not pass.
    let queued: Vec<usize> = (1..=EVENTS)
        .map(|i| publish(port, ACTION, &temperature(i)))
        .collect();
    assert_eq!(queued, [0, 0, 1, 1, 1]);
    for i in 3..=EVENTS {
        let event = &line(&rx, "event")["event"];
        assert_eq!(
            event["celsius"].as_u64(),
            Some(i as u64 * 10 + 1),
            "{event}"
        );
    }
    let done = line(&rx, "result");
    assert_eq!(done["unsubscribed"], Value::Bool(true), "{done}");
}

/// Polls the source peer's `state` until it holds `n` subscriptions.
fn wait_for_subscriptions(stdin: &mut ChildStdin, rx: &mpsc::Receiver<Value>, n: usize) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let state = command(stdin, rx, "state");
        if state["subscriptions"].as_array().unwrap().len() == n {
            return state;
        }
        assert!(
            Instant::now() < deadline,
            "never {n} subscription(s): {state}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The celsius value of a notification body the peer sent (`<celsius>N</celsius>`).
fn celsius(body: &str) -> u64 {
    let start = body.find("celsius>").expect("a celsius element") + 8;
    body[start..start + body[start..].find('<').unwrap()]
        .parse()
        .unwrap()
}

#[test]
fn the_client_subscribes_to_the_cxf_source_renews_and_is_ended() {
    let (_peer, mut stdin, rx) = peer(&["source"]);
    let started = line(&rx, "source");
    let source = started["source"].as_str().unwrap().to_owned();
    let manager = started["manager"].as_str().unwrap().to_owned();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut sink = Sink::bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
        let client = EventingClient::default();
        let mut options = SubscribeOptions::new(Version::Rec2011, sink.notify_url());
        // CXF's JAX-WS endpoints are SOAP 1.1 bindings.
        options.soap = SoapVersion::V11;
        options.notify_to.params =
            vec![r#"<app:Key xmlns:app="urn:lather:test">k-7</app:Key>"#.to_owned()];
        options.end_to = Some(Endpoint {
            address: sink.end_url(),
            params: Vec::new(),
        });
        options.expires = Some("PT10M".into());
        let mut subscription = client.subscribe(&source, &options).await.unwrap();
        assert_eq!(subscription.manager.address, manager);
        assert_eq!(subscription.manager.params.len(), 1, "{subscription:?}");
        assert!(
            subscription.manager.params[0].contains(CXF_ID_NS)
                && subscription.manager.params[0].contains("SubscriptionID"),
            "{subscription:?}"
        );
        assert!(subscription.expires.is_some(), "{subscription:?}");

        let state = command(&mut stdin, &rx, "state");
        let ticket = &state["subscriptions"][0];
        assert_eq!(
            ticket["notify_to"].as_str(),
            Some(sink.notify_url().as_str())
        );
        assert_eq!(ticket["end_to"].as_str(), Some(sink.end_url().as_str()));
        assert_eq!(ticket["wrapped"], Value::Bool(false), "{state}");
        assert_eq!(
            ticket["notify_to_parameters"],
            serde_json::json!(["{urn:lather:test}Key=k-7"]),
            "{state}"
        );

        // CXF states the status as a dateTime and grants the asked renewal.
        let status = client.get_status(&subscription).await.unwrap();
        assert!(
            status.is_some_and(|s| s.starts_with("20") && s.contains('T')),
            "{subscription:?}"
        );
        let granted = client.renew(&mut subscription, Some("PT5M")).await.unwrap();
        assert_eq!(granted.as_deref(), Some("PT5M"));

        let emitted = command(&mut stdin, &rx, "emit 3");
        assert_eq!(emitted["subscriptions"].as_u64(), Some(1), "{emitted}");
        let mut got = Vec::new();
        for _ in 0..3 {
            let message = tokio::time::timeout(Duration::from_secs(30), sink.next())
                .await
                .expect("a notification in time");
            let Some(SinkMessage::Notification(n)) = message else {
                panic!("{message:?}")
            };
            assert_eq!(n.action.as_deref(), Some(ACTION), "{n:?}");
            assert!(
                n.body.contains("Temperature") && n.body.contains(EVENT_NS),
                "{n:?}"
            );
            // CXF echoes the NotifyTo reference parameter as a header block.
            assert_eq!(n.reference_parameters.len(), 1, "{n:?}");
            assert!(n.reference_parameters[0].contains(">k-7<"), "{n:?}");
            got.push(celsius(&n.body));
        }
        // CXF's notificator sends from a thread pool: any order.
        got.sort_unstable();
        assert_eq!(got, [1, 2, 3]);

        client.unsubscribe(&subscription).await.unwrap();
        let state = command(&mut stdin, &rx, "state");
        assert_eq!(state["subscriptions"], serde_json::json!([]), "{state}");
        assert_eq!(
            state["requests"],
            serde_json::json!(["Subscribe", "GetStatus", "Renew", "Unsubscribe"]),
            "{state}"
        );

        // A second subscription, ended by the source: SubscriptionEnd reaches EndTo.
        client.subscribe(&source, &options).await.unwrap();
        let ended = command(&mut stdin, &rx, "end");
        assert_eq!(ended["ended"].as_u64(), Some(1), "{ended}");
        let message = tokio::time::timeout(Duration::from_secs(30), sink.next())
            .await
            .expect("SubscriptionEnd in time");
        let Some(SinkMessage::End(end)) = message else {
            panic!("{message:?}")
        };
        assert_eq!(end.status, format!("{WSE11}/SourceShuttingDown"));
        assert_eq!(end.reason, "the CXF peer is shutting down");
    });
}

#[test]
fn lather_subscribe_2011_receives_the_events_of_the_cxf_source() {
    let (_peer, mut stdin, rx) = peer(&["source"]);
    let source = line(&rx, "source")["source"].as_str().unwrap().to_owned();
    let mut cli = Running(
        Command::new(env!("CARGO_BIN_EXE_lather"))
            .args([
                "subscribe",
                "--source",
                &source,
                "--version",
                "2011",
                "--soap",
                "1.1",
            ])
            .args(["--count", "4", "--timeout-s", "60", "--json"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run lather subscribe"),
    );
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = pipe.read_to_string(&mut text);
            text
        })
    };
    let stdout = drain(Box::new(cli.0.stdout.take().unwrap()));
    let stderr = drain(Box::new(cli.0.stderr.take().unwrap()));
    wait_for_subscriptions(&mut stdin, &rx, 1);
    command(&mut stdin, &rx, "emit 4");
    // `lather subscribe` gives up by itself after its 60 s timeout.
    let status = cli.0.wait().unwrap();
    let (stdout, stderr) = (stdout.join().unwrap(), stderr.join().unwrap());
    assert!(status.success(), "{stdout}\n{stderr}");
    let mut got: Vec<u64> = stdout
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            assert_eq!(v["action"].as_str(), Some(ACTION), "{v}");
            celsius(v["body"].as_str().unwrap())
        })
        .collect();
    got.sort_unstable();
    assert_eq!(got, [1, 2, 3, 4], "{stdout}");
    assert!(
        stderr.contains("unsubscribed after 4 notification(s)"),
        "{stderr}"
    );
    let state = wait_for_subscriptions(&mut stdin, &rx, 0);
    assert_eq!(
        state["requests"],
        serde_json::json!(["Subscribe", "Unsubscribe"]),
        "{state}"
    );
}
