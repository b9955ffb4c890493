//! `[telemetry]` with a remote handler: the service's call over NATS and the worker's run of
//! the handler are spans of the request's trace, the worker's a child of the call's (the
//! trace context travels in the request frame). Against a real `nats-server`.

use crate::collector;
use crate::serving;
use crate::workers;

use collector::{attribute, collector, exporting, hex, post, spans_of};
use lather_config::Config;
use lather_test_util::{ScratchDir, nats};
use nats::NatsServer;
use serving::{Running, free_port, wait_healthy};
use std::time::Duration;

/// Serves echo with the remote handler `log` (`oneway` or waited for) and a worker, sends
/// one request in trace `trace`, and checks that the service's call and the worker's run
/// of the handler are spans of that trace, the worker's a child of the call's, the call on
/// NATS subject `subject`.
async fn remote_spans_follow_the_trace(oneway: bool, trace: &str, subject: &str) {
    let server = if oneway {
        NatsServer::start_jetstream("otel-oneway")
    } else {
        NatsServer::start("otel")
    };
    let extra = if oneway { "oneway = true\n" } else { "" };
    let (received, collector) = collector().await;
    let port = free_port();
    let text = format!(
        "[server]\nlisten = \"127.0.0.1:{port}\"\n\n\
         [telemetry]\notlp_endpoint = \"http://{collector}\"\n\n\
         [nats]\nurl = \"{}\"\n\n\
         [handlers.log]\nkind = \"logging\"\nplacement = \"remote\"\nfallback = \"fault\"\ntimeout_ms = 5000\n{extra}\n\
         [[service]]\nname = \"e\"\npath = \"/e\"\nbuiltin = \"echo\"\nrequest = [[\"log\"]]\n",
        server.url()
    );
    let file = if oneway { "oneway.toml" } else { "remote.toml" };
    let dir = ScratchDir::new("otel-remote");
    let config = dir.write(file, &text);
    let start = |command: &str| Running(exporting(command, &config));
    let _worker = start("worker");
    let mut service = start("serve");
    if !oneway {
        let parsed = Config::from_toml(&text, "remote.toml").unwrap();
        workers::wait_for_worker(&parsed, "log", Duration::from_secs(20)).await;
    }
    tokio::task::block_in_place(|| wait_healthy(port, &mut service.0));

    let incoming = format!("00-{trace}-b7ad6b7169203331-01");
    let url = format!("http://127.0.0.1:{port}/e");
    assert_eq!(post(&url, Some(&incoming)).await, 200);
    let spans = spans_of(
        &received,
        trace,
        &[
            "soap.request",
            "soap.handler",
            "remote.call",
            "remote.handler",
        ],
    )
    .await;
    let (request, handler, call, worker) = (&spans[0], &spans[1], &spans[2], &spans[3]);
    assert_eq!(hex(&request.parent_span_id), "b7ad6b7169203331");
    assert_eq!(attribute(handler, "lather.handler").as_deref(), Some("log"));
    assert_eq!(call.parent_span_id, handler.span_id);
    assert_eq!(
        attribute(call, "messaging.destination.name").as_deref(),
        Some(subject)
    );
    // Exported by the worker process, continuing the call's context.
    assert_eq!(worker.parent_span_id, call.span_id);
    assert_eq!(attribute(worker, "lather.handler").as_deref(), Some("log"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_handler_call_and_the_worker_run_are_spans_of_the_request_trace() {
    remote_spans_follow_the_trace(
        false,
        "0af7651916cd43dd8448eb211c80319c",
        "lather.handler.log",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_oneway_hand_over_and_the_worker_run_are_spans_of_the_request_trace() {
    // Queued in JetStream (waiting there for the worker) and run later: the frame
    // carries the hand-over's context.
    remote_spans_follow_the_trace(
        true,
        "1af7651916cd43dd8448eb211c80319d",
        "lather.oneway.log",
    )
    .await;
}
