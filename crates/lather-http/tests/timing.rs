//! The server-side timing breakdown: each request's phases in `Server-Timing` for clients
//! that ask (and may read `/metrics`), and in the `lather_phase_seconds` histograms.

use crate::support;

use lather_envelope::SoapVersion;
use support::*;

const SLOW_ECHO: &str = "[handlers.wait]\nkind = \"sleep\"\nmillis = 30\n\n\
    [[service]]\nname = \"echo\"\npath = \"/echo\"\nbuiltin = \"echo\"\nrequest = [[\"wait\"]]\n";

async fn call(server: &TestServer, ask: bool) -> Answer {
    let mut req = soap_request(
        server.addr,
        "/echo",
        SoapVersion::V12,
        envelope(SoapVersion::V12, "", ECHO_PAYLOAD),
    );
    if ask {
        req.headers_mut()
            .insert("lather-timing", "1".parse().unwrap());
    }
    let answer = send(server.addr, req).await;
    assert_eq!(answer.status, 200, "{}", answer.text());
    answer
}

/// The `name;dur=MS` entries of a `Server-Timing` value.
fn entries(answer: &Answer) -> Vec<(String, f64)> {
    let value = answer
        .headers
        .get("server-timing")
        .expect("no Server-Timing")
        .to_str()
        .unwrap();
    value
        .split(", ")
        .map(|entry| {
            let (name, dur) = entry
                .split_once(";dur=")
                .unwrap_or_else(|| panic!("{value}"));
            (name.to_owned(), dur.parse().unwrap())
        })
        .collect()
}

#[tokio::test]
async fn a_client_that_asks_gets_each_phase_and_the_stages_inside_the_service() {
    let server = TestServer::start(SLOW_ECHO).await;
    let answer = call(&server, true).await;
    let timing = entries(&answer);
    let names: Vec<&str> = timing.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "receive",
            "queue",
            "decode",
            "request-stages",
            "call",
            "encode",
            "total"
        ]
    );
    let dur = |name: &str| timing.iter().find(|(n, _)| n == name).unwrap().1;
    assert!(dur("request-stages") >= 30.0, "{timing:?}");
    assert!(dur("call") < 30.0, "{timing:?}");
    let sum: f64 = timing
        .iter()
        .filter(|(n, _)| n != "total")
        .map(|(_, d)| d)
        .sum();
    assert!((sum - dur("total")).abs() < 0.01, "{timing:?}");
    assert!(
        call(&server, false)
            .await
            .headers
            .get("server-timing")
            .is_none(),
        "Server-Timing without asking"
    );
}

#[tokio::test]
async fn the_header_follows_server_timing_and_admin_allow() {
    let hidden = TestServer::start(&format!(
        "[server]\nlisten = \"127.0.0.1:0\"\nadmin_allow = [\"10.0.0.0/8\"]\n{SLOW_ECHO}"
    ))
    .await;
    assert!(
        call(&hidden, true)
            .await
            .headers
            .get("server-timing")
            .is_none(),
        "a client admin_allow refuses got Server-Timing"
    );
    let off = TestServer::start(&format!(
        "[server]\nlisten = \"127.0.0.1:0\"\nserver_timing = \"off\"\n{SLOW_ECHO}"
    ))
    .await;
    assert!(
        call(&off, true)
            .await
            .headers
            .get("server-timing")
            .is_none()
    );
    let always = TestServer::start(&format!(
        "[server]\nlisten = \"127.0.0.1:0\"\nserver_timing = \"always\"\n{SLOW_ECHO}"
    ))
    .await;
    assert!(!entries(&call(&always, false).await).is_empty());
}

#[tokio::test]
async fn every_phase_is_counted_in_histograms_unless_switched_off() {
    let server = TestServer::start(SLOW_ECHO).await;
    for _ in 0..3 {
        call(&server, false).await;
    }
    let metrics = get(server.addr, "/metrics").await;
    let text = metrics.text();
    for phase in [
        "receive",
        "queue",
        "decode",
        "request-stages",
        "call",
        "encode",
    ] {
        let count = metric(
            text,
            &format!("lather_phase_seconds_count{{service=\"echo\",phase=\"{phase}\"}}"),
        );
        assert_eq!(count, Some(3.0), "{phase}: {text}");
    }
    // Three 30 ms waits: none in a bucket up to 16 ms, all by 32.768 ms… or later.
    let under_16ms = metric(
        text,
        "lather_phase_seconds_bucket{le=\"0.016384\",service=\"echo\",phase=\"request-stages\"}",
    );
    assert_eq!(under_16ms, Some(0.0), "{text}");
    let off = TestServer::start(&format!(
        "[server]\nlisten = \"127.0.0.1:0\"\nphase_metrics = false\n{SLOW_ECHO}"
    ))
    .await;
    call(&off, false).await;
    assert!(
        !get(off.addr, "/metrics")
            .await
            .text()
            .contains("phase_seconds")
    );
}
