//! `[telemetry]`: `lather serve` exports its spans over OTLP/HTTP to a collector (a hyper
//! server in this test decoding the protobuf bodies), and the gateway's upstream request
//! carries the exported trace's `traceparent`.

use crate::collector;
use crate::serving;

use collector::{
    attribute, collector, echo_backend, exporting, hex, post, self_signed_tls, spans_of,
    tls_collector,
};
use lather_test_util::ScratchDir;
use serving::{Running, free_port, lather, wait_healthy};
use std::process::Stdio;
use std::time::{Duration, Instant};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gateway_request_is_exported_with_its_upstream_call_and_carries_its_traceparent() {
    let (received, collector) = collector().await;
    let (seen, backend) = echo_backend().await;

    let port = free_port();
    let dir = ScratchDir::new("otel");
    let config = dir.write(
        "gateway.toml",
        format!(
            "[server]\nlisten = \"127.0.0.1:{port}\"\n\n\
             [telemetry]\notlp_endpoint = \"http://{collector}\"\nservice_name = \"lather-test\"\n\
             export_timeout_ms = 5000\n\n\
             [handlers.log]\nkind = \"logging\"\n\n\
             [[service]]\nname = \"quotes\"\npath = \"/quotes\"\n\
             upstream = [\"http://{backend}/ws\"]\nrequest = [[\"log\"]]\n"
        ),
    );
    let mut running = Running(exporting("serve", &config));
    tokio::task::block_in_place(|| wait_healthy(port, &mut running.0));
    let url = format!("http://127.0.0.1:{port}/quotes");

    // A request without a trace context: a new trace, whose context the backend receives.
    assert_eq!(post(&url, None).await, 200);
    let forwarded = seen
        .lock()
        .unwrap()
        .pop()
        .expect("the backend got no traceparent");
    let parts: Vec<&str> = forwarded.split('-').collect();
    assert_eq!(parts.len(), 4, "{forwarded}");
    let trace_id = parts[1];
    let spans = spans_of(
        &received,
        trace_id,
        &[
            "soap.request",
            "upstream.call",
            "soap.stage",
            "soap.handler",
        ],
    )
    .await;
    let (request, upstream, stage, handler) = (&spans[0], &spans[1], &spans[2], &spans[3]);
    assert_eq!(
        attribute(request, "lather.service").as_deref(),
        Some("quotes")
    );
    assert_eq!(
        attribute(request, "soap.operation").as_deref(),
        Some("echo")
    );
    assert_eq!(
        attribute(request, "http.response.status_code").as_deref(),
        Some("200")
    );
    assert_eq!(
        attribute(request, "client.address").as_deref(),
        Some("127.0.0.1")
    );
    assert!(
        request.parent_span_id.is_empty(),
        "a new trace's request span is a root"
    );
    assert_eq!(upstream.parent_span_id, request.span_id);
    assert_eq!(stage.parent_span_id, request.span_id);
    assert_eq!(handler.parent_span_id, stage.span_id);
    assert_eq!(attribute(handler, "lather.handler").as_deref(), Some("log"));
    // The backend's traceparent names the upstream call's span as its parent.
    assert_eq!(parts[2], hex(&upstream.span_id));

    // A request with a trace context continues it: same trace id, the caller's span as
    // the request span's parent, and the backend sees that trace id, not the caller's span.
    let caller_trace = "4bf92f3577b34da6a3ce929d0e0e4736";
    let caller_span = "00f067aa0ba902b7";
    let incoming = format!("00-{caller_trace}-{caller_span}-01");
    assert_eq!(post(&url, Some(&incoming)).await, 200);
    let forwarded = seen
        .lock()
        .unwrap()
        .pop()
        .expect("the backend got no traceparent");
    assert!(
        forwarded.starts_with(&format!("00-{caller_trace}-")),
        "{forwarded}"
    );
    assert_ne!(
        forwarded, incoming,
        "the client's header was passed through unchanged"
    );
    let spans = spans_of(&received, caller_trace, &["soap.request", "upstream.call"]).await;
    assert_eq!(hex(&spans[0].parent_span_id), caller_span);
    assert_eq!(spans[1].parent_span_id, spans[0].span_id);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_collector_that_is_down_costs_a_warning_and_requests_are_answered() {
    use std::io::BufRead;
    let (_, backend) = echo_backend().await;
    // Nothing listens there.
    let down = free_port();
    let port = free_port();
    let dir = ScratchDir::new("otel");
    let config = dir.write(
        "down.toml",
        format!(
            "[server]\nlisten = \"127.0.0.1:{port}\"\n\n\
             [telemetry]\notlp_endpoint = \"http://127.0.0.1:{down}\"\n\n\
             [[service]]\nname = \"quotes\"\npath = \"/quotes\"\n\
             upstream = [\"http://{backend}/ws\"]\n"
        ),
    );
    let mut child = lather()
        .arg("serve")
        .arg("--config")
        .arg(&config)
        .env("OTEL_BSP_SCHEDULE_DELAY", "100")
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (lines, warned) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            if lines.send(line).is_err() {
                break;
            }
        }
    });
    let mut running = Running(child);
    tokio::task::block_in_place(|| wait_healthy(port, &mut running.0));
    let url = format!("http://127.0.0.1:{port}/quotes");
    for _ in 0..3 {
        assert_eq!(post(&url, None).await, 200);
    }
    let line = tokio::task::block_in_place(|| {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match warned.recv_timeout(left) {
                Ok(line) if line.contains("trace export failed") => return line,
                Ok(_) => {}
                Err(e) => panic!("no warning about the collector: {e}"),
            }
        }
    });
    assert!(line.contains("WARN"), "{line}");
    assert!(
        line.contains(&format!("127.0.0.1:{down}/v1/traces")),
        "{line}"
    );
    // Still answering.
    assert_eq!(post(&url, None).await, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_https_collector_is_verified_with_outbound_ca_file_and_receives_the_spans() {
    let (acceptor, cert) = self_signed_tls();
    let (received, collector) = tls_collector(acceptor).await;
    let port = free_port();
    let dir = ScratchDir::new("otel");
    let ca = dir.write("collector-ca.pem", &cert);
    let config = dir.write(
        "https.toml",
        format!(
            "[server]\nlisten = \"127.0.0.1:{port}\"\noutbound_ca_file = {ca:?}\n\n\
             [telemetry]\notlp_endpoint = \"https://localhost:{}\"\n\n\
             [[service]]\nname = \"echo\"\npath = \"/echo\"\nbuiltin = \"echo\"\n",
            collector.port()
        ),
    );
    let mut running = Running(exporting("serve", &config));
    tokio::task::block_in_place(|| wait_healthy(port, &mut running.0));
    let trace = "5bf92f3577b34da6a3ce929d0e0e4737";
    let incoming = format!("00-{trace}-00f067aa0ba902b7-01");
    let url = format!("http://127.0.0.1:{port}/echo");
    assert_eq!(post(&url, Some(&incoming)).await, 200);
    let spans = spans_of(&received, trace, &["soap.request"]).await;
    assert_eq!(
        attribute(&spans[0], "lather.service").as_deref(),
        Some("echo")
    );
}
