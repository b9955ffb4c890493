//! Each example program runs to the end and prints what it promises.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Runs the example binary at `path` (bounded to 60 s) and returns its standard output.
fn run(path: &str) -> String {
    let mut child = Command::new(path)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {path}: {e}"));
    let started = Instant::now();
    loop {
        if child.try_wait().expect("wait").is_some() {
            break;
        }
        if started.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            panic!("{path} did not finish within 60 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let output = child.wait_with_output().expect("output");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{path} failed: {}\nstdout:\n{stdout}\nstderr:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

#[test]
fn custom_handler_kind_tags_answers_refuses_untagged_requests_and_names_bad_keys() {
    let out = run(env!("CARGO_BIN_EXE_custom-handler-kind"));
    assert!(out.contains("served by: node-7"), "{out}");
    assert!(
        out.contains("refused: {urn:example:tenant}NoTenant"),
        "{out}"
    );
    assert!(out.contains("configuration error: tenant.toml:18: handlers.tag.nodes: kind \"tenant-tag\" does not take nodes"), "{out}");
}

#[test]
fn custom_service_adds_and_raises_its_own_faults() {
    let out = run(env!("CARGO_BIN_EXE_custom-service"));
    assert!(out.contains("SOAP 1.1: 40 + 2 -> "), "{out}");
    assert!(out.contains(">42</c:addResponse>"), "{out}");
    assert!(out.contains("SOAP 1.2: 40 + 2 -> "), "{out}");
    assert!(
        out.contains("overflow fault: code Sender subcode Overflow"),
        "{out}"
    );
    assert!(
        out.contains("unknown operation fault: UnknownOperation"),
        "{out}"
    );
}

#[test]
fn echo_client_gets_related_answers_in_both_versions() {
    let out = run(env!("CARGO_BIN_EXE_echo-client"));
    assert!(out.contains("SOAP 1.1: <e:echo"), "{out}");
    assert!(out.contains("SOAP 1.2: <e:echo"), "{out}");
    assert_eq!(out.matches("(relates to urn:uuid:").count(), 2, "{out}");
}

#[test]
fn event_publisher_delivers_only_the_subscribed_topic() {
    let out = run(env!("CARGO_BIN_EXE_event-publisher"));
    assert!(
        out.contains("subscribed; manager at http://127.0.0.1:"),
        "{out}"
    );
    assert!(
        out.contains("received 3 notifications on the prices topic"),
        "{out}"
    );
    assert_eq!(out.matches("<p:topic>prices</p:topic>").count(), 3, "{out}");
    assert!(!out.contains("weather"), "{out}");
}
