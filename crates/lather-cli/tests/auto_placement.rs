//! `placement = "auto"` against a real `nats-server` and a real `lather worker` process: a
//! handler cheap everywhere stays local, one slow here but fast on the worker (the worker
//! stands for a bigger machine: its own configuration gives the same handler a tenth of the
//! cost) goes remote.

use crate::workers;
use lather_test_util::{ScratchDir, nats};

use bytes::Bytes;
use lather_config::Config;
use lather_envelope::{Envelope, Limits};
use lather_pipeline::{Context, Direction, Message, Outcome, Plan, Step, run};
use lather_remote::EXPLORE_EVERY;
use nats::NatsServer;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;
use workers::{check, figure, wait_for_worker};

fn scratch(name: &str) -> ScratchDir {
    ScratchDir::new(&format!("auto-{name}"))
}

/// Two auto-placed handlers, `cheap` (logging) and `slow` (sleep `slow_millis`), and a
/// service that runs one after the other.
fn config_text(url: &str, slow_millis: u64) -> String {
    format!(
        "[nats]\nurl = \"{url}\"\n\
         [handlers.cheap]\nkind = \"logging\"\nplacement = \"auto\"\n\
         [handlers.slow]\nkind = \"sleep\"\nmillis = {slow_millis}\nplacement = \"auto\"\n\
         [[service]]\nname = \"s\"\npath = \"/s\"\nbuiltin = \"echo\"\nrequest = [[\"cheap\"], [\"slow\"]]\n"
    )
}

fn message(id: u128) -> Message {
    let text = r#"<s:Envelope xmlns:s="http://schemas.xmlsoap.org/soap/envelope/"><s:Body><o:Get xmlns:o="urn:o"><o:Item>IBM</o:Item></o:Get></s:Body></s:Envelope>"#;
    let envelope =
        Envelope::parse(Bytes::from_static(text.as_bytes()), &Limits::default()).unwrap();
    Message::new(
        envelope,
        Context {
            id,
            service: "s".into(),
            action: None,
            client: None,
            direction: Direction::Request,
            request: None,
            properties: Default::default(),
        },
    )
}

/// Runs `count` messages through `plan`, `at_once` at a time; each must pass.
async fn send(plan: &Arc<Plan>, first: u128, count: u128, at_once: u128) {
    let limits = Arc::new(Limits::default());
    let mut id = first;
    while id < first + count {
        let batch: Vec<_> = (id..(id + at_once).min(first + count))
            .map(|n| {
                let plan = plan.clone();
                let limits = limits.clone();
                tokio::spawn(async move { run(&plan, message(n), &limits).await })
            })
            .collect();
        for task in batch {
            let out = task.await.unwrap();
            assert!(matches!(out, Outcome::Continue(_)), "{out:?}");
        }
        id += at_once;
    }
}

/// (local calls, remote calls) of an auto-placed step.
fn sides(step: &Step) -> (u64, u64) {
    (
        figure(step, "auto_local_calls"),
        figure(step, "auto_remote_calls"),
    )
}

struct Worker(Child);

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cheap_handler_stays_local_and_the_slow_one_goes_to_the_bigger_worker() {
    let server = NatsServer::start("auto");
    let dir = scratch("sides");
    // The worker's machine is "bigger": the same `slow` handler costs 1 ms there, 100 ms here.
    let worker_path = dir.join("worker.toml");
    std::fs::write(&worker_path, config_text(&server.url(), 1)).unwrap();
    let log = std::fs::File::create(dir.join("worker.log")).unwrap();
    // No --handlers: the worker hosts every auto-placed handler by default.
    let _worker = Worker(
        Command::new(env!("CARGO_BIN_EXE_lather"))
            .args(["--log-level", "warn", "worker", "--config"])
            .arg(&worker_path)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start lather worker"),
    );
    let config = Config::from_toml(&config_text(&server.url(), 100), "server.toml").unwrap();
    wait_for_worker(&config, "cheap", Duration::from_secs(20)).await;
    wait_for_worker(&config, "slow", Duration::from_secs(20)).await;
    let services = lather_compose::build_services(&config).unwrap();
    services.link.as_ref().unwrap().connect().await.unwrap();
    let plan = Arc::new(services.plans[0].request.clone());
    let cheap = plan.stages()[0][0].clone();
    let slow = plan.stages()[1][0].clone();
    assert_eq!((cheap.name(), slow.name()), ("cheap", "slow"));

    // Warm-up: both sides of both handlers get measured.
    send(&plan, 0, 64, 4).await;
    let (cheap_before, slow_before) = (sides(&cheap), sides(&slow));
    assert!(cheap_before.0 > 0 && cheap_before.1 > 0, "{cheap_before:?}");
    assert!(slow_before.0 > 0 && slow_before.1 > 0, "{slow_before:?}");

    const MEASURED: u64 = 8 * EXPLORE_EVERY;
    send(&plan, 1000, u128::from(MEASURED), 8).await;
    let (cheap_after, slow_after) = (sides(&cheap), sides(&slow));
    let cheap_local = cheap_after.0 - cheap_before.0;
    let cheap_remote = cheap_after.1 - cheap_before.1;
    let slow_local = slow_after.0 - slow_before.0;
    let slow_remote = slow_after.1 - slow_before.1;
    eprintln!(
        "cheap: {cheap_local} local, {cheap_remote} remote; slow: {slow_local} local, {slow_remote} remote; \
         estimates µs cheap {}/{} slow {}/{}",
        figure(&cheap, "auto_local_estimate_micros"),
        figure(&cheap, "auto_remote_estimate_micros"),
        figure(&slow, "auto_local_estimate_micros"),
        figure(&slow, "auto_remote_estimate_micros"),
    );
    assert_eq!(cheap_local + cheap_remote, MEASURED);
    assert_eq!(slow_local + slow_remote, MEASURED);
    // All but the exploring share (1 in 32, about 3 %) on the side that is sooner.
    assert!(
        cheap_local >= MEASURED * 9 / 10,
        "cheap ran locally {cheap_local} of {MEASURED}"
    );
    assert!(
        slow_remote >= MEASURED * 9 / 10,
        "slow ran remotely {slow_remote} of {MEASURED}"
    );
    // Exploration keeps the other side measured.
    assert!(cheap_remote >= 1 && slow_local >= 1, "both sides explored");
    assert_eq!(figure(&slow, "remote_fallbacks"), 0);
    drop(server);
}

#[test]
fn check_shows_auto_placement_and_refuses_it_without_nats() {
    let dir = scratch("check");
    let path = dir.join("auto.toml");
    std::fs::write(
        &path,
        "[nats]\nurl = \"nats://127.0.0.1:4222\"\n[handlers.log]\nkind = \"logging\"\nplacement = \"auto\"\n",
    )
    .unwrap();
    let out = check(&path);
    assert_eq!(out.status.code(), Some(0));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("auto: local or remote on lather.handler.log"),
        "{stdout}"
    );
    std::fs::write(
        &path,
        "[handlers.log]\nkind = \"logging\"\nplacement = \"auto\"\n",
    )
    .unwrap();
    let out = check(&path);
    assert_eq!(out.status.code(), Some(78));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("auto.toml:3:"), "{stderr}");
    assert!(stderr.contains("handlers.log.placement"), "{stderr}");
    assert!(stderr.contains("[nats]"), "{stderr}");
}
