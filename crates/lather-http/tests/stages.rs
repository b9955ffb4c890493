//! Handler stages configured on services and run by the host.

use crate::support;

use http::StatusCode;
use lather_config::Config;
use lather_envelope::{FaultKind, SoapVersion};
use support::*;

const HANDLERS: &str = r#"
[handlers.log]
kind = "logging"
oneway = true

[handlers.burn]
kind = "cpu-burn"
micros = 50

[handlers.hash]
kind = "digest"
rounds = 10

[handlers.slow]
kind = "sleep"
millis = 2000
timeout_ms = 50

[handlers.slow-optional]
kind = "sleep"
millis = 2000
timeout_ms = 50
must_perform = false
"#;

fn service(flows: &str) -> String {
    format!(
        "{HANDLERS}\n[[service]]\nname = \"echo\"\npath = \"/echo\"\nbuiltin = \"echo\"\n{flows}\n"
    )
}

#[tokio::test]
async fn a_request_flow_runs_before_the_service() {
    let s = TestServer::start(&service(r#"request = [["log", "burn", "hash"], ["burn"]]"#)).await;
    for version in [SoapVersion::V11, SoapVersion::V12] {
        let answer = post(
            s.addr,
            "/echo",
            version,
            envelope(version, "", ECHO_PAYLOAD),
        )
        .await;
        assert_eq!(answer.status, StatusCode::OK, "{}", answer.text());
        assert_eq!(&answer.envelope().body()[..], ECHO_PAYLOAD.as_bytes());
    }
}

#[tokio::test]
async fn a_handler_over_its_timeout_faults_the_request() {
    let s = TestServer::start(&service(r#"request = [["slow"]]"#)).await;
    let answer = post(
        s.addr,
        "/echo",
        SoapVersion::V12,
        envelope(SoapVersion::V12, "", ECHO_PAYLOAD),
    )
    .await;
    answer.assert_fault(FaultKind::HandlerTimeout, SoapVersion::V12);
    assert!(
        answer
            .text()
            .contains("handler slow did not finish within 50 ms"),
        "{}",
        answer.text()
    );
}

#[tokio::test]
async fn a_handler_that_need_not_perform_is_ignored_when_it_fails() {
    let s = TestServer::start(&service(r#"request = [["slow-optional", "burn"]]"#)).await;
    let answer = post(
        s.addr,
        "/echo",
        SoapVersion::V11,
        envelope(SoapVersion::V11, "", ECHO_PAYLOAD),
    )
    .await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.text());
}

#[tokio::test]
async fn the_response_flow_runs_on_the_services_answer() {
    let s = TestServer::start(&service(r#"response = [["slow"]]"#)).await;
    let answer = post(
        s.addr,
        "/echo",
        SoapVersion::V11,
        envelope(SoapVersion::V11, "", ECHO_PAYLOAD),
    )
    .await;
    answer.assert_fault(FaultKind::HandlerTimeout, SoapVersion::V11);
    let fine = TestServer::start(&service(r#"response = [["log", "hash"]]"#)).await;
    let answer = post(
        fine.addr,
        "/echo",
        SoapVersion::V11,
        envelope(SoapVersion::V11, "", ECHO_PAYLOAD),
    )
    .await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.text());
}

#[tokio::test]
async fn a_bad_handler_is_refused_when_the_server_starts() {
    let text = format!(
        "[server]\nlisten = \"127.0.0.1:0\"\n{}",
        service("").replace("kind = \"digest\"", "kind = \"digestive\"")
    );
    let config = Config::from_toml(&text, "bad.toml").unwrap();
    let err = lather_http::Server::bind(&config).await.unwrap_err();
    assert!(matches!(err, lather_http::ServeError::Config(_)), "{err}");
    let msg = err.to_string();
    assert!(
        msg.contains("bad.toml:13:") && msg.contains("unknown kind \"digestive\""),
        "{msg}"
    );
}

#[tokio::test]
async fn handler_counters_and_admission_show_on_metrics() {
    let s = TestServer::start(&service(r#"request = [["log", "burn", "slow-optional"]]"#)).await;
    for _ in 0..3 {
        let answer = post(
            s.addr,
            "/echo",
            SoapVersion::V11,
            envelope(SoapVersion::V11, "", ECHO_PAYLOAD),
        )
        .await;
        assert_eq!(answer.status, StatusCode::OK);
    }
    let text = get(s.addr, "/metrics").await.text().to_owned();
    let line = |name: &str, handler: &str| {
        format!(r#"lather_{name}_total{{service="echo",handler="{handler}"}}"#)
    };
    assert_eq!(
        metric(&text, &line("handler_calls", "burn")),
        Some(3.0),
        "{text}"
    );
    assert_eq!(
        metric(&text, &line("handler_timeouts", "slow-optional")),
        Some(3.0),
        "{text}"
    );
    assert_eq!(
        metric(&text, &line("handler_ignored_failures", "slow-optional")),
        Some(3.0),
        "{text}"
    );
    assert_eq!(
        metric(&text, &line("handler_ignored_failures", "burn")),
        Some(0.0),
        "{text}"
    );
    assert_eq!(
        metric(&text, r#"lather_admission_in_flight{service="echo"}"#),
        Some(0.0),
        "{text}"
    );
    assert!(
        metric(&text, r#"lather_admission_limit{service="echo"}"#).unwrap() >= 1.0,
        "{text}"
    );
    assert_eq!(
        metric(&text, r#"lather_admission_refused_total{service="echo"}"#),
        Some(0.0),
        "{text}"
    );
}

#[tokio::test]
async fn a_monitor_reports_operations_sizes_and_clients() {
    let text = format!(
        "[handlers.mon]\nkind = \"monitor\"\n{}",
        service(r#"request = [["mon"]]"#)
    );
    let s = TestServer::start(&text).await;
    let echo = envelope(SoapVersion::V11, "", ECHO_PAYLOAD);
    for _ in 0..3 {
        assert_eq!(
            post(s.addr, "/echo", SoapVersion::V11, echo.clone())
                .await
                .status,
            StatusCode::OK
        );
    }
    let other = envelope(SoapVersion::V11, "", r#"<m:other xmlns:m="urn:m"/>"#);
    post(s.addr, "/echo", SoapVersion::V11, other).await;
    let metrics = get(s.addr, "/metrics").await.text().to_owned();
    let op = r#"service="echo",handler="mon",operation="{urn:lather:echo}echo""#;
    assert_eq!(
        metric(&metrics, &format!("lather_monitor_messages_total{{{op}}}")),
        Some(3.0),
        "{metrics}"
    );
    assert_eq!(
        metric(&metrics, &format!("lather_monitor_bytes_total{{{op}}}")),
        Some(3.0 * echo.len() as f64),
        "{metrics}"
    );
    assert_eq!(
        metric(&metrics, &format!("lather_monitor_clients{{{op}}}")),
        Some(1.0),
        "{metrics}"
    );
    assert_eq!(
        metric(
            &metrics,
            &format!(r#"lather_monitor_client_messages_total{{{op},client="127.0.0.1"}}"#)
        ),
        Some(3.0),
        "{metrics}"
    );
    let other_op =
        r#"lather_monitor_messages_total{service="echo",handler="mon",operation="{urn:m}other"}"#;
    assert_eq!(metric(&metrics, other_op), Some(1.0), "{metrics}");
}
