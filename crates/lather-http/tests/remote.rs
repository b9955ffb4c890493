//! A remote handler behind the HTTP server, against a real `nats-server`: the request is
//! answered through a worker, `/metrics` counts remote calls and fallbacks, and without a
//! worker the client gets the `HandlerFailed` fault.

use crate::support;

use lather_test_util::nats;

use lather_config::Config;
use lather_envelope::{FaultKind, Limits, SoapVersion};
use lather_remote::Link;
use lather_remote::worker::Hosted;
use std::time::{Duration, Instant};
use support::*;
use tokio::sync::oneshot;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_handler_answers_through_a_worker_and_shows_on_metrics() {
    let nats = nats::NatsServer::start("http");
    let text = format!(
        "[server]\nlisten = \"127.0.0.1:0\"\n[nats]\nurl = \"{}\"\n[handlers.log]\nkind = \"logging\"\nplacement = \"remote\"\ntimeout_ms = 1000\n[[service]]\nname = \"echo\"\npath = \"/echo\"\nbuiltin = \"echo\"\nrequest = [[\"log\"]]\n",
        nats.url()
    );
    let config = Config::from_toml(&text, "remote.toml").unwrap();
    let server = TestServer::start(&text).await;

    // A worker hosting `log`, in this process but on its own NATS connection.
    let worker = support::worker::InProcessWorker::start(&config, "log").await;

    let body = envelope(SoapVersion::V12, "", "<m:Ping xmlns:m=\"urn:m\">1</m:Ping>");
    let deadline = Instant::now() + Duration::from_secs(10);
    // Requests sent before the worker has subscribed are remote calls too (they fail).
    let mut sent = 0u32;
    loop {
        sent += 1;
        let answer = post(server.addr, "/echo", SoapVersion::V12, body.clone()).await;
        if answer.status == 200 {
            assert!(answer.text().contains("<m:Ping"), "{}", answer.text());
            break;
        }
        assert!(Instant::now() < deadline, "the worker never answered");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let metrics = get(server.addr, "/metrics").await;
    let calls = metric(
        metrics.text(),
        "lather_remote_calls_total{service=\"echo\",handler=\"log\"}",
    );
    assert_eq!(calls, Some(f64::from(sent)), "{}", metrics.text());
    // The answered call's time is split as equation 1: the NATS round trip always takes
    // some microseconds; the three parts are reported per handler.
    for part in ["handler", "transfer", "overhead"] {
        let name = format!("lather_remote_{part}_micros_total{{service=\"echo\",handler=\"log\"}}");
        assert!(
            metric(metrics.text(), &name).is_some(),
            "{name}: {}",
            metrics.text()
        );
    }
    let transfer = metric(
        metrics.text(),
        "lather_remote_transfer_micros_total{service=\"echo\",handler=\"log\"}",
    );
    assert!(transfer > Some(0.0), "{}", metrics.text());

    worker.stop().await;
    // Until the server has seen the worker's subscription go, a request may still be
    // routed to it and time out (1 s here); after that, no responders: the fallback.
    let deadline = Instant::now() + Duration::from_secs(10);
    let answer = loop {
        let answer = post(server.addr, "/echo", SoapVersion::V12, body.clone()).await;
        if !answer.text().contains("HandlerTimeout") || Instant::now() > deadline {
            break answer;
        }
    };
    answer.assert_fault(FaultKind::HandlerFailed, SoapVersion::V12);
    assert!(
        answer.text().contains("lather.handler.log"),
        "{}",
        answer.text()
    );
    let metrics = get(server.addr, "/metrics").await;
    let fallbacks = metric(
        metrics.text(),
        "lather_remote_fallbacks_total{service=\"echo\",handler=\"log\"}",
    );
    assert!(fallbacks >= Some(1.0), "{}", metrics.text());
}

/// Counts how many calls run at once, each taking a little while.
#[derive(Default)]
struct Gauge {
    now: std::sync::atomic::AtomicUsize,
    most: std::sync::atomic::AtomicUsize,
}

impl lather_pipeline::Handler for Gauge {
    fn access(&self) -> lather_pipeline::Access {
        lather_pipeline::Access::read_only(lather_pipeline::Parts::none())
    }
    fn call<'a>(&'a self, _: &'a lather_pipeline::Message) -> lather_pipeline::HandlerFuture<'a> {
        use std::sync::atomic::Ordering::SeqCst;
        Box::pin(async move {
            let now = self.now.fetch_add(1, SeqCst) + 1;
            self.most.fetch_max(now, SeqCst);
            tokio::time::sleep(Duration::from_millis(30)).await;
            self.now.fetch_sub(1, SeqCst);
            lather_pipeline::Verdict::proceed()
        })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_handles_no_more_requests_at_once_than_its_bound() {
    let nats = nats::NatsServer::start("bound");
    let text = format!(
        "[server]\nlisten = \"127.0.0.1:0\"\n[nats]\nurl = \"{}\"\n[handlers.log]\nkind = \"logging\"\nplacement = \"remote\"\n[[service]]\nname = \"echo\"\npath = \"/echo\"\nbuiltin = \"echo\"\nrequest = [[\"log\"]]\n",
        nats.url()
    );
    let config = Config::from_toml(&text, "bound.toml").unwrap();
    let server = TestServer::start(&text).await;
    let link = Link::new(config.nats.as_ref().unwrap());
    link.connect().await.unwrap();
    let gauge = std::sync::Arc::new(Gauge::default());
    let hosted = vec![Hosted {
        name: "log".into(),
        handler: gauge.clone(),
        options: lather_pipeline::Options::default(),
    }];
    let (stop, stopped) = oneshot::channel::<()>();
    let worker = tokio::spawn(async move {
        let shutdown = async {
            let _ = stopped.await;
        };
        lather_remote::worker::serve_bounded(&link, hosted, Limits::default(), 2, shutdown).await
    });
    let body = envelope(SoapVersion::V12, "", "<m:Ping xmlns:m=\"urn:m\">1</m:Ping>");
    // Wait until the worker answers, then send eight at once.
    let deadline = Instant::now() + Duration::from_secs(10);
    while post(server.addr, "/echo", SoapVersion::V12, body.clone())
        .await
        .status
        != 200
    {
        assert!(Instant::now() < deadline, "the worker never answered");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let calls: Vec<_> = (0..8)
        .map(|_| {
            let body = body.clone();
            let addr = server.addr;
            tokio::spawn(async move { post(addr, "/echo", SoapVersion::V12, body).await.status })
        })
        .collect();
    for call in calls {
        assert_eq!(call.await.unwrap(), 200);
    }
    let most = gauge.most.load(std::sync::atomic::Ordering::SeqCst);
    assert!(
        (1..=2).contains(&most),
        "{most} calls ran at once on a worker bounded to 2"
    );
    stop.send(()).unwrap();
    worker.await.unwrap().unwrap();
}
