//! `[telemetry]` with a remote handler: the service's call over NATS and the worker's run of
//! the handler are spans of the request's trace, the worker's a child of the call's (the
//! trace context travels in the request frame). Against a real `nats-server`.

mod collector;
mod serving;
mod workers;

use collector::{attribute, collector, hex, post, spans_of};
use lather_config::Config;
use lather_test_util::nats;
use nats::NatsServer;
use serving::{Running, free_port, lather, temp_config, wait_healthy};
use std::process::Stdio;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_handler_call_and_the_worker_run_are_spans_of_the_request_trace() {
    let server = NatsServer::start("otel");
    let (received, collector) = collector().await;
    let port = free_port();
    let text = format!(
        "[server]\nlisten = \"127.0.0.1:{port}\"\n\n\
         [telemetry]\notlp_endpoint = \"http://{collector}\"\n\n\
         [nats]\nurl = \"{}\"\n\n\
         [handlers.log]\nkind = \"logging\"\nplacement = \"remote\"\nfallback = \"fault\"\ntimeout_ms = 5000\n\n\
         [[service]]\nname = \"e\"\npath = \"/e\"\nbuiltin = \"echo\"\nrequest = [[\"log\"]]\n",
        server.url()
    );
    let config = temp_config("otel-remote", "remote.toml", &text);
    let start = |command: &str| {
        Running(
            lather()
                .arg(command)
                .arg("--config")
                .arg(&config)
                .env("OTEL_BSP_SCHEDULE_DELAY", "100")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap(),
        )
    };
    let _worker = start("worker");
    let mut service = start("serve");
    let parsed = Config::from_toml(&text, "remote.toml").unwrap();
    workers::wait_for_worker(&parsed, "log", Duration::from_secs(20)).await;
    tokio::task::block_in_place(|| wait_healthy(port, &mut service.0));

    let trace = "0af7651916cd43dd8448eb211c80319c";
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
        Some("lather.handler.log")
    );
    // Exported by the worker process, continuing the call's context.
    assert_eq!(worker.parent_span_id, call.span_id);
    assert_eq!(attribute(worker, "lather.handler").as_deref(), Some("log"));
}
