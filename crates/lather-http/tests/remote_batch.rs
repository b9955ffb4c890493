//! Transfer batching of remote calls (`[nats] batch_max_items`) against a real
//! `nats-server`: calls made together reach the workers in fewer NATS messages, each is
//! answered on its own (the handler, `log`, sleeps 300 ms: longer than the ack timeout, so
//! a batch the worker did not acknowledge whole would count its calls lost), `/metrics` counts the batches, and with no worker every call of a
//! batch hears "no responders" at once (a `HandlerFailed` fault, not a timeout). The worker
//! runs in this process on its own NATS connection; the only process started is the
//! test's `nats-server`, stopped by its PID.

use crate::support;

use futures_util::StreamExt;
use lather_config::Config;
use lather_envelope::{FaultKind, SoapVersion};
use lather_remote::frame::CallBatch;
use std::time::{Duration, Instant};
use support::*;

const CALLS: usize = 16;

fn config(url: &str) -> String {
    format!(
        "[server]\nlisten = \"127.0.0.1:0\"\n\
         [nats]\nurl = \"{url}\"\nbatch_max_items = 8\nbatch_wait_ms = 50\n\
         [handlers.log]\nkind = \"sleep\"\nmillis = 300\nplacement = \"remote\"\ntimeout_ms = 5000\n\
         [[service]]\nname = \"echo\"\npath = \"/echo\"\nbuiltin = \"echo\"\nrequest = [[\"log\"]]\n"
    )
}

/// Sends `CALLS` requests at once; their answers, in order.
async fn together(server: &TestServer) -> Vec<Answer> {
    let calls = (0..CALLS).map(|i| {
        let body = envelope(
            SoapVersion::V12,
            "",
            &format!("<m:Ping xmlns:m=\"urn:m\">{i}</m:Ping>"),
        );
        post(server.addr, "/echo", SoapVersion::V12, body)
    });
    futures_util::future::join_all(calls).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_made_together_travel_in_batches_and_are_answered_each() {
    let nats = lather_test_util::nats::NatsServer::start("batch");
    let text = config(&nats.url());
    let parsed = Config::from_toml(&text, "batch.toml").unwrap();
    let server = TestServer::start(&text).await;

    // With no worker, every call of a batch is told at once that nobody serves it.
    let started = Instant::now();
    for answer in together(&server).await {
        answer.assert_fault(FaultKind::HandlerFailed, SoapVersion::V12);
        assert!(answer.text().contains("no worker"), "{}", answer.text());
    }
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "the calls waited for their timeout"
    );

    // A plain subscriber sees every message sent to the handler's subject.
    let watcher = async_nats::connect(nats.url()).await.unwrap();
    let mut seen = watcher.subscribe("lather.handler.log").await.unwrap();
    watcher.flush().await.unwrap();
    let worker = support::worker::InProcessWorker::start(&parsed, "log").await;
    // Once the worker serves, one call goes through alone.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let body = envelope(SoapVersion::V12, "", "<m:Ping xmlns:m=\"urn:m\">w</m:Ping>");
        if post(server.addr, "/echo", SoapVersion::V12, body)
            .await
            .status
            == 200
        {
            break;
        }
        assert!(Instant::now() < deadline, "the worker never answered");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    while tokio::time::timeout(Duration::from_millis(100), seen.next())
        .await
        .is_ok()
    {}

    let answers = together(&server).await;
    for (i, answer) in answers.iter().enumerate() {
        assert_eq!(answer.status, 200, "{}", answer.text());
        assert!(
            answer.text().contains(&format!(">{i}</m:Ping>")),
            "{}",
            answer.text()
        );
    }
    let mut messages = 0;
    let mut batched = 0;
    while let Ok(Some(message)) =
        tokio::time::timeout(Duration::from_millis(300), seen.next()).await
    {
        messages += 1;
        if CallBatch::is_batch(&message.payload) {
            batched += CallBatch::decode(message.payload).unwrap().items.len();
        }
    }
    assert!(messages < CALLS, "{messages} messages for {CALLS} calls");
    assert!(batched >= 2, "no batch among {messages} messages");
    let metrics = get(server.addr, "/metrics").await;
    let counted = metric(
        metrics.text(),
        "lather_remote_batched_calls_total{service=\"echo\",handler=\"log\"}",
    )
    .unwrap_or(0.0);
    assert!(counted >= batched as f64, "{}", metrics.text());
    // The worker acknowledged each batch whole: no batched call counted lost for want of
    // its own acknowledgement.
    let lost = metric(
        metrics.text(),
        "lather_remote_lost_total{service=\"echo\",handler=\"log\"}",
    );
    assert_eq!(lost, Some(0.0), "{}", metrics.text());
    worker.stop().await;
}
