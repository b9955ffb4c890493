//! Remote handler stages against a real `nats-server` (started by `nats/`): remote results
//! equal local ones, fallbacks, recovery after a NATS restart, a worker killed under load,
//! and the CLI's behaviour when NATS is unreachable.

use crate::workers;
use lather_test_util::{ScratchDir, nats};

use bytes::Bytes;
use lather_config::Config;
use lather_envelope::{Envelope, FaultKind, Limits};
use lather_pipeline::{Context, Direction, Identity, Message, Outcome, Plan, Step, run};
use lather_remote::Link;
use lather_remote::worker::Hosted;
use nats::{NatsServer, free_port};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::oneshot;
use workers::{check, figure, wait_for_worker};

const WSSE: &str =
    "http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-wssecurity-secext-1.0.xsd";

fn scratch(name: &str) -> ScratchDir {
    ScratchDir::new(&format!("remote-{name}"))
}

/// Every built-in kind that can run on a worker, with its parameters. `notify` (it needs an
/// HTTP sink) and `wsrf-resource` (its store is one file that only one process may open)
/// are left out; see docs/handlers.md "Remote stages".
fn kinds(dir: &Path) -> Vec<(&'static str, String)> {
    let key = dir.join("aes.key");
    std::fs::write(
        &key,
        "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\n",
    )
    .unwrap();
    let users = dir.join("users.txt");
    std::fs::write(&users, "alice:secret\n").unwrap();
    let map = dir.join("rules.map");
    std::fs::write(&map, "namespace urn:old = urn:new\n").unwrap();
    let audit = dir.join("audit.log");
    let path = |p: &Path| p.display().to_string();
    vec![
        ("logging", String::new()),
        ("monitor", String::new()),
        ("cpu-burn", "micros = 10".into()),
        ("sleep", "millis = 1".into()),
        ("digest", "rounds = 2".into()),
        ("compress", "min_bytes = 64".into()),
        ("decompress", String::new()),
        ("encrypt", format!("key_file = {:?}", path(&key))),
        ("decrypt", format!("key_file = {:?}", path(&key))),
        (
            "audit-file",
            format!("path = {:?}\nfsync = \"never\"", path(&audit)),
        ),
        ("wsse-username", format!("users_file = {:?}", path(&users))),
        ("wsa", String::new()),
        ("format-convert", format!("mapping_file = {:?}", path(&map))),
    ]
}

/// A configuration with one service per kind (`/kind`, request = [[kind]]); `nats`: every
/// handler remote with `fallback = "fault"` through that server.
fn kinds_config(dir: &Path, nats: Option<&str>) -> Config {
    let mut text = String::new();
    let kinds = kinds(dir);
    for (kind, params) in &kinds {
        text.push_str(&format!("[handlers.{kind}]\nkind = \"{kind}\"\n{params}\n"));
        if nats.is_some() {
            text.push_str("placement = \"remote\"\nfallback = \"fault\"\ntimeout_ms = 5000\n");
        }
    }
    if let Some(url) = nats {
        text.push_str(&format!("[nats]\nurl = \"{url}\"\n"));
    }
    for (kind, _) in &kinds {
        text.push_str(&format!(
            "[[service]]\nname = \"{kind}\"\npath = \"/{kind}\"\nbuiltin = \"echo\"\nrequest = [[\"{kind}\"]]\n"
        ));
    }
    Config::from_toml(&text, "kinds.toml").unwrap()
}

/// A SOAP 1.1 request of about 2 KB: WS-Security and WS-Addressing headers, a Body in the
/// namespace `urn:old` whose prefix is declared on the Envelope.
fn request_text() -> String {
    let items: String = (0..40)
        .map(|i| format!("<o:Item n=\"{i}\">IBM-{i:04}</o:Item>"))
        .collect();
    format!(
        r#"<?xml version="1.0"?><s:Envelope xmlns:s="http://schemas.xmlsoap.org/soap/envelope/" xmlns:o="urn:old"><s:Header><wsse:Security xmlns:wsse="{WSSE}"><wsse:UsernameToken><wsse:Username>alice</wsse:Username><wsse:Password>secret</wsse:Password></wsse:UsernameToken></wsse:Security><wsa:Action xmlns:wsa="http://www.w3.org/2005/08/addressing">urn:get</wsa:Action><wsa:MessageID xmlns:wsa="http://www.w3.org/2005/08/addressing">urn:uuid:6f1c2d1e-0000-4000-8000-000000000001</wsa:MessageID></s:Header><s:Body><o:GetQuotes>{items}</o:GetQuotes></s:Body></s:Envelope>"#
    )
}

fn message_of(bytes: Bytes, id: u128) -> Message {
    let envelope = Envelope::parse(bytes, &Limits::default()).unwrap();
    Message::new(
        envelope,
        Context {
            id,
            service: "svc".into(),
            action: Some("urn:get".into()),
            client: Some(std::net::Ipv4Addr::LOCALHOST.into()),
            direction: Direction::Request,
            request: None,
            properties: Default::default(),
        },
    )
}

/// The outcome as text: the envelope's bytes, or the fault's kind and reason.
fn summary(outcome: &Outcome) -> String {
    match outcome {
        Outcome::Continue(m) => format!(
            "continue {}",
            String::from_utf8_lossy(m.envelope().as_bytes())
        ),
        Outcome::Respond(e) => format!("respond {}", String::from_utf8_lossy(e.as_bytes())),
        Outcome::Fault(f) => format!("fault {:?} {}", f.kind(), f.reason()),
    }
}

fn plans_by_kind(config: &Config, plans: Vec<lather_compose::ServicePlans>) -> Vec<(String, Plan)> {
    config
        .services
        .iter()
        .zip(plans)
        .map(|(s, p)| (s.name.get_ref().clone(), p.request))
        .collect()
}

fn step_of(plan: &Plan) -> &Arc<Step> {
    &plan.stages()[0][0]
}

/// An in-process worker hosting every remote handler of `config`.
struct Worker {
    stop: Option<oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<()>,
}

impl Worker {
    async fn start(config: &Config) -> Worker {
        let link = Link::new(config.nats.as_ref().unwrap());
        link.connect().await.unwrap();
        let hosted: Vec<Hosted> = config
            .handlers
            .iter()
            .filter(|(_, h)| h.placement() == lather_config::Placement::Remote)
            .map(|(name, cfg)| {
                let (handler, options) = lather_compose::build_handler(name, cfg, config).unwrap();
                Hosted {
                    name: name.clone(),
                    handler,
                    options,
                }
            })
            .collect();
        let first = hosted[0].name.clone();
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            let shutdown = async {
                let _ = stopped.await;
            };
            lather_remote::worker::serve(&link, hosted, Limits::default(), shutdown)
                .await
                .unwrap();
        });
        wait_for_worker(config, &first, Duration::from_secs(10)).await;
        Worker {
            stop: Some(stop),
            task,
        }
    }

    async fn stop(mut self) {
        let _ = self.stop.take().unwrap().send(());
        tokio::time::timeout(Duration::from_secs(10), &mut self.task)
            .await
            .expect("the worker drains within 10 s")
            .unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remote_results_equal_local_results_for_every_kind() {
    let server = NatsServer::start("equal");
    let dir = scratch("equal");
    let local_config = kinds_config(&dir, None);
    let remote_config = kinds_config(&dir, Some(&server.url()));
    let local = plans_by_kind(
        &local_config,
        lather_compose::service_plans(&local_config).unwrap(),
    );
    let services = lather_compose::build_services(&remote_config).unwrap();
    services.link.as_ref().unwrap().connect().await.unwrap();
    let remote = plans_by_kind(&remote_config, services.plans);
    let worker = Worker::start(&remote_config).await;
    let limits = Limits::default();
    let plan =
        |set: &[(String, Plan)], kind: &str| set.iter().find(|(k, _)| k == kind).unwrap().1.clone();

    let base = Bytes::from(request_text());
    let compressed = match run(
        &plan(&local, "compress"),
        message_of(base.clone(), 1),
        &limits,
    )
    .await
    {
        Outcome::Continue(m) => m.envelope().as_bytes().clone(),
        other => panic!("compress: {}", summary(&other)),
    };
    let encrypted = match run(
        &plan(&local, "encrypt"),
        message_of(base.clone(), 1),
        &limits,
    )
    .await
    {
        Outcome::Continue(m) => m.envelope().as_bytes().clone(),
        other => panic!("encrypt: {}", summary(&other)),
    };
    for (kind, _) in kinds(&dir) {
        let input = match kind {
            "decompress" => compressed.clone(),
            "decrypt" => encrypted.clone(),
            _ => base.clone(),
        };
        let here = run(&plan(&local, kind), message_of(input.clone(), 42), &limits).await;
        let there = run(&plan(&remote, kind), message_of(input, 42), &limits).await;
        if kind == "encrypt" {
            // A fresh IV per message: compare what decrypts out of each.
            let decrypt = plan(&local, "decrypt");
            let open = |o: Outcome| {
                let Outcome::Continue(m) = o else {
                    panic!("encrypt: {}", summary(&o))
                };
                message_of(m.envelope().as_bytes().clone(), 42)
            };
            let here = run(&decrypt, open(here), &limits).await;
            let there = run(&decrypt, open(there), &limits).await;
            assert_eq!(summary(&here), summary(&there), "encrypt, decrypted");
            assert!(summary(&here).contains("IBM-0039"));
        } else {
            assert_eq!(summary(&here), summary(&there), "{kind}");
        }
        let step = step_of(&plan(&remote, kind)).clone();
        assert_eq!(figure(&step, "remote_calls"), 1, "{kind} ran remotely once");
        assert_eq!(figure(&step, "remote_fallbacks"), 0, "{kind}");
    }
    // The converted Body is really converted (so equality above is not of two no-ops).
    let converted = run(
        &plan(&remote, "format-convert"),
        message_of(base.clone(), 7),
        &limits,
    )
    .await;
    assert!(
        summary(&converted).contains("urn:new"),
        "{}",
        summary(&converted)
    );
    worker.stop().await;
    drop(server);
}

/// A configuration with one remote `sleep` handler named `slow`.
fn slow_config(url: &str, fallback: &str, extra: &str) -> Config {
    let text = format!(
        "[nats]\nurl = \"{url}\"\n[handlers.slow]\nkind = \"sleep\"\nmillis = 20\nplacement = \"remote\"\nfallback = \"{fallback}\"\n{extra}\n[[service]]\nname = \"s\"\npath = \"/s\"\nbuiltin = \"echo\"\nrequest = [[\"slow\"]]\n"
    );
    Config::from_toml(&text, "slow.toml").unwrap()
}

async fn client_plan(config: &Config) -> Plan {
    let services = lather_compose::build_services(config).unwrap();
    services.link.as_ref().unwrap().connect().await.unwrap();
    services.plans[0].request.clone()
}

fn small_message(id: u128) -> Message {
    message_of(Bytes::from(request_text()), id)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_workers_the_fallback_runs_locally_or_faults_naming_subject_and_url() {
    let server = NatsServer::start("fallback");
    let limits = Limits::default();
    let local = client_plan(&slow_config(&server.url(), "local", "")).await;
    let out = run(&local, small_message(1), &limits).await;
    assert!(matches!(out, Outcome::Continue(_)), "{}", summary(&out));
    assert_eq!(figure(step_of(&local), "remote_fallbacks"), 1);

    let fault = client_plan(&slow_config(&server.url(), "fault", "")).await;
    let out = run(&fault, small_message(2), &limits).await;
    let Outcome::Fault(f) = &out else {
        panic!("expected a fault, got {}", summary(&out))
    };
    assert_eq!(f.kind(), FaultKind::HandlerFailed);
    assert!(f.reason().contains("lather.handler.slow"), "{}", f.reason());
    assert!(f.reason().contains(&server.url()), "{}", f.reason());
    assert!(f.reason().contains("no worker"), "{}", f.reason());

    // With a worker, the same plan runs remotely.
    let config = slow_config(&server.url(), "fault", "");
    let worker = Worker::start(&config).await;
    let out = run(&fault, small_message(3), &limits).await;
    assert!(matches!(out, Outcome::Continue(_)), "{}", summary(&out));
    assert_eq!(figure(step_of(&fault), "remote_calls"), 2);
    worker.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_service_recovers_after_nats_server_restarts_under_load() {
    let mut server = NatsServer::start("restart");
    let config = slow_config(&server.url(), "fault", "timeout_ms = 300\nretries = 1");
    let plan = Arc::new(client_plan(&config).await);
    let worker = Worker::start(&config).await;
    let limits = Arc::new(Limits::default());
    let send = |id: u128| {
        let plan = plan.clone();
        let limits = limits.clone();
        tokio::spawn(async move { run(&plan, small_message(id), &limits).await })
    };
    // Load before the restart: all succeed.
    for id in 0..20 {
        let out = send(id).await.unwrap();
        assert!(matches!(out, Outcome::Continue(_)), "{}", summary(&out));
    }
    let in_flight: Vec<_> = (100..120).map(send).collect();
    server.stop();
    let mut outage = Vec::new();
    for id in 200..210 {
        outage.push(send(id).await.unwrap());
    }
    for task in in_flight {
        // Every request in flight at the kill gets an answer, success or fault.
        let out = tokio::time::timeout(Duration::from_secs(10), task)
            .await
            .unwrap()
            .unwrap();
        assert!(matches!(out, Outcome::Continue(_) | Outcome::Fault(_)));
    }
    assert!(
        outage
            .iter()
            .all(|o| matches!(o, Outcome::Fault(f) if f.kind() == FaultKind::HandlerFailed)),
        "while NATS is down the fallback faults at once"
    );
    assert!(figure(step_of(&plan), "remote_fallbacks") >= 10);
    server.start_again();
    let restarted = Instant::now();
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut id = 1000;
    let recovered = loop {
        id += 1;
        if matches!(send(id).await.unwrap(), Outcome::Continue(_)) {
            break restarted.elapsed();
        }
        assert!(
            Instant::now() < deadline,
            "no success within 30 s of the restart"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    // Once back, it stays back.
    for n in 0..20 {
        let out = send(5000 + n).await.unwrap();
        assert!(matches!(out, Outcome::Continue(_)), "{}", summary(&out));
    }
    eprintln!("first success {recovered:?} after the restart");
    worker.stop().await;
}

fn lather_worker(config: &Path) -> Child {
    Command::new(env!("CARGO_BIN_EXE_lather"))
        .args(["worker", "--config"])
        .arg(config)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start lather worker")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_killed_under_load_loses_no_request() {
    let server = NatsServer::start("kill");
    let dir = scratch("kill");
    let extra = "timeout_ms = 400\nretries = 3\nretry_backoff_ms = 10";
    let text = format!(
        "[nats]\nurl = \"{}\"\n[handlers.slow]\nkind = \"sleep\"\nmillis = 20\nplacement = \"remote\"\nfallback = \"fault\"\n{extra}\n[[service]]\nname = \"s\"\npath = \"/s\"\nbuiltin = \"echo\"\nrequest = [[\"slow\"]]\n",
        server.url()
    );
    let path = dir.join("workers.toml");
    std::fs::write(&path, &text).unwrap();
    let config = Config::from_toml(&text, "workers.toml").unwrap();
    let mut doomed = lather_worker(&path);
    let mut survivor = lather_worker(&path);
    wait_for_worker(&config, "slow", Duration::from_secs(10)).await;
    let plan = Arc::new(client_plan(&config).await);
    let limits = Arc::new(Limits::default());
    const TOTAL: u128 = 400;
    let tasks: Vec<_> = (0..TOTAL)
        .map(|id| {
            let plan = plan.clone();
            let limits = limits.clone();
            tokio::spawn(async move {
                // Spread over about 2 s, so the kill lands mid-stream.
                tokio::time::sleep(Duration::from_millis(u64::try_from(id).unwrap() * 5)).await;
                run(&plan, small_message(id), &limits).await
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(700)).await;
    doomed.kill().unwrap(); // SIGKILL to its PID
    doomed.wait().unwrap();
    let mut succeeded = 0;
    let mut faulted = 0;
    for task in tasks {
        let out = tokio::time::timeout(Duration::from_secs(30), task)
            .await
            .expect("every request is answered")
            .unwrap();
        match out {
            Outcome::Continue(_) => succeeded += 1,
            Outcome::Fault(_) => faulted += 1,
            Outcome::Respond(_) => panic!("sleep never responds"),
        }
    }
    assert_eq!(succeeded + faulted, TOTAL, "none lost");
    assert!(
        succeeded >= TOTAL * 95 / 100,
        "retries reach the surviving worker: {succeeded} of {TOTAL} succeeded"
    );
    let counters = step_of(&plan).counters();
    eprintln!(
        "succeeded {succeeded}, faulted {faulted}, timeouts {}, retries {}",
        counters.timeouts.load(std::sync::atomic::Ordering::Relaxed),
        counters.retries.load(std::sync::atomic::Ordering::Relaxed)
    );
    // The survivor stops gracefully on SIGTERM.
    let status = Command::new("kill")
        .args(["-TERM", &survivor.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let deadline = Instant::now() + Duration::from_secs(10);
    let exit = loop {
        if let Some(exit) = survivor.try_wait().unwrap() {
            break exit;
        }
        assert!(Instant::now() < deadline, "worker did not stop on SIGTERM");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(exit.code(), Some(0));
    drop(server);
}

#[test]
fn serve_and_worker_exit_69_naming_the_url_when_nats_is_unreachable() {
    let dir = scratch("unreachable");
    let url = format!("nats://127.0.0.1:{}", free_port());
    let text = format!(
        "[server]\nlisten = \"127.0.0.1:0\"\n[nats]\nurl = \"{url}\"\nconnect_timeout_ms = 500\n[handlers.log]\nkind = \"logging\"\nplacement = \"remote\"\n[[service]]\nname = \"e\"\npath = \"/e\"\nbuiltin = \"echo\"\nrequest = [[\"log\"]]\n"
    );
    let path = dir.join("unreachable.toml");
    std::fs::write(&path, text).unwrap();
    for command in ["serve", "worker"] {
        let out = Command::new(env!("CARGO_BIN_EXE_lather"))
            .args([command, "--config"])
            .arg(&path)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(69), "{command}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains(&format!("cannot reach the NATS server at {url}")),
            "{command}: {stderr}"
        );
    }
}

#[test]
fn check_shows_where_a_remote_handler_runs() {
    let dir = scratch("check");
    let path = dir.join("check.toml");
    std::fs::write(
        &path,
        "[nats]\nurl = \"nats://127.0.0.1:4222\"\nsubject_prefix = \"edge\"\n[handlers.log]\nkind = \"logging\"\nplacement = \"remote\"\nfallback = \"local\"\n",
    )
    .unwrap();
    let out = check(&path);
    assert_eq!(out.status.code(), Some(0));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("remote on edge.handler.log, fallback local"),
        "{stdout}"
    );
}

#[test]
fn a_remote_handler_without_nats_is_a_config_error_naming_the_line() {
    let dir = scratch("nonats");
    let path = dir.join("nonats.toml");
    std::fs::write(
        &path,
        "[handlers.log]\nkind = \"logging\"\nplacement = \"remote\"\n",
    )
    .unwrap();
    let out = check(&path);
    assert_eq!(out.status.code(), Some(78));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("nonats.toml:3:"), "{stderr}");
    assert!(stderr.contains("[nats]"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_wsse_username_sets_the_identity_in_the_serving_process() {
    let server = NatsServer::start("identity");
    let dir = scratch("identity");
    let users = dir.join("users.txt");
    std::fs::write(&users, "alice:secret\n").unwrap();
    let text = format!(
        "[nats]\nurl = \"{}\"\n[handlers.auth]\nkind = \"wsse-username\"\nusers_file = {:?}\nplacement = \"remote\"\nfallback = \"fault\"\ntimeout_ms = 5000\n[[service]]\nname = \"s\"\npath = \"/s\"\nbuiltin = \"echo\"\nrequest = [[\"auth\"]]\n",
        server.url(),
        users.display().to_string()
    );
    let config = Config::from_toml(&text, "identity.toml").unwrap();
    let plan = client_plan(&config).await;
    let worker = Worker::start(&config).await;
    let out = run(&plan, small_message(5), &Limits::default()).await;
    let Outcome::Continue(m) = &out else {
        panic!("{}", summary(&out))
    };
    assert_eq!(
        m.context().properties.get::<Identity>(),
        Some(&Identity("alice".into()))
    );
    assert!(
        !summary(&out).contains("UsernameToken"),
        "{}",
        summary(&out)
    );
    assert_eq!(figure(step_of(&plan), "remote_calls"), 1);
    worker.stop().await;
    drop(server);
}
