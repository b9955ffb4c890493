//! Remote handler stages under faults, against a real `nats-server` and real `lather worker`
//! processes: a worker SIGKILLed mid-call (its call is sent again to the other worker when
//! the kind is idempotent, faults at once when it is not), a NATS server SIGKILLed with calls
//! in flight (they fall back at once, later calls too, and calls go remote again once the
//! server is back), a request its client gave up on (counted), and the adaptive timeout.
//!
//! Every bound here is a generous "answered within 10 s": without acknowledgements,
//! heartbeats and connection events these calls hang for the 30 s default timeout.

use crate::workers;
use lather_test_util::{ScratchDir, nats};

use bytes::Bytes;
use lather_config::Config;
use lather_envelope::{Envelope, FaultKind, Limits};
use lather_pipeline::{Context, Direction, Message, Outcome, Plan, Step, run};
use nats::NatsServer;
use std::io::{BufRead, BufReader, Read};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};
use tokio::task::JoinHandle;
use workers::figure;

/// How long a request may take here: far below the 30 s an unanswered call used to hang.
const ANSWERED_WITHIN: Duration = Duration::from_secs(10);

/// A `lather worker` process, SIGKILLed when dropped if still running; its log lines are
/// read on a thread (so its stderr never fills) and `ready` fires once it has subscribed.
struct WorkerProcess {
    child: Child,
    ready: mpsc::Receiver<()>,
}

impl WorkerProcess {
    fn start(config: &Path) -> WorkerProcess {
        let mut child = Command::new(env!("CARGO_BIN_EXE_lather"))
            .args(["worker", "--config"])
            .arg(config)
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start lather worker");
        let stderr = child.stderr.take().unwrap();
        let (tell, ready) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if line.contains("lather worker ready") {
                    let _ = tell.send(());
                }
            }
        });
        WorkerProcess { child, ready }
    }

    /// Waits until the worker has subscribed (10 s at most).
    fn wait_ready(&self) {
        self.ready
            .recv_timeout(Duration::from_secs(10))
            .expect("the worker subscribes within 10 s");
    }

    /// SIGKILL to its PID, and reap it.
    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for WorkerProcess {
    fn drop(&mut self) {
        self.kill();
    }
}

fn scratch(name: &str) -> ScratchDir {
    ScratchDir::new(&format!("faults-{name}"))
}

/// Writes `text` as `dir/name` and parses it.
fn config_file(dir: &Path, name: &str, text: &str) -> (std::path::PathBuf, Config) {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    (path, Config::from_toml(text, name).unwrap())
}

/// `[nats]` and one service `/s` whose request flow is the remote handler `h`.
fn remote_config(url: &str, handler: &str) -> String {
    format!(
        "[nats]\nurl = \"{url}\"\n[handlers.h]\n{handler}\nplacement = \"remote\"\n[[service]]\nname = \"s\"\npath = \"/s\"\nbuiltin = \"echo\"\nrequest = [[\"h\"]]\n"
    )
}

fn message(id: u128) -> Message {
    let text = "<s:Envelope xmlns:s=\"http://schemas.xmlsoap.org/soap/envelope/\"><s:Body><m:Ping xmlns:m=\"urn:m\">x</m:Ping></s:Body></s:Envelope>";
    let envelope =
        Envelope::parse(Bytes::from_static(text.as_bytes()), &Limits::default()).unwrap();
    Message::new(
        envelope,
        Context {
            id,
            service: "s".into(),
            action: None,
            client: Some(std::net::Ipv4Addr::LOCALHOST.into()),
            direction: Direction::Request,
            request: None,
            properties: Default::default(),
        },
    )
}

async fn client_plan(config: &Config) -> Arc<Plan> {
    let services = lather_compose::build_services(config).unwrap();
    services.link.as_ref().unwrap().connect().await.unwrap();
    Arc::new(services.plans[0].request.clone())
}

fn step(plan: &Plan) -> &Arc<Step> {
    &plan.stages()[0][0]
}

fn send(plan: &Arc<Plan>, id: u128) -> JoinHandle<Outcome> {
    let plan = plan.clone();
    tokio::spawn(async move { run(&plan, message(id), &Limits::default()).await })
}

/// The outcome, which must come within [`ANSWERED_WITHIN`].
async fn answered(task: JoinHandle<Outcome>, what: &str) -> Outcome {
    tokio::time::timeout(ANSWERED_WITHIN, task)
        .await
        .unwrap_or_else(|_| panic!("{what}: no answer within {ANSWERED_WITHIN:?}"))
        .unwrap()
}

fn describe(outcome: &Outcome) -> String {
    match outcome {
        Outcome::Continue(_) => "continue".to_owned(),
        Outcome::Respond(_) => "respond".to_owned(),
        Outcome::Fault(f) => format!("fault {:?}: {}", f.kind(), f.reason()),
    }
}

/// Waits until `step`'s figure `name` reaches `at_least` (10 s at most).
async fn wait_figure(step: &Step, name: &str, at_least: u64) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while figure(step, name) < at_least {
        assert!(
            Instant::now() < deadline,
            "{name} stayed at {} (< {at_least})",
            figure(step, name)
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_killed_mid_call_has_its_calls_sent_to_the_other_worker_at_once() {
    let server = NatsServer::start("killed-mid-call");
    let dir = scratch("killed-mid-call");
    // No timeout_ms: the default 30 s, which is how long these calls used to hang.
    let text = remote_config(
        &server.url(),
        "kind = \"sleep\"\nmillis = 2000\nfallback = \"fault\"",
    );
    let (path, config) = config_file(&dir, "sleep.toml", &text);
    let mut doomed = WorkerProcess::start(&path);
    doomed.wait_ready();
    let plan = client_plan(&config).await;
    // Four calls, all in the doomed worker's hands (it is the only one yet).
    let calls: Vec<_> = (1..=4).map(|id| send(&plan, id)).collect();
    wait_figure(step(&plan), "remote_calls", 4).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let survivor = WorkerProcess::start(&path);
    survivor.wait_ready();
    doomed.kill();
    for (n, call) in calls.into_iter().enumerate() {
        let out = answered(call, &format!("call {n}")).await;
        assert!(matches!(out, Outcome::Continue(_)), "{}", describe(&out));
    }
    let step = step(&plan);
    assert_eq!(figure(step, "remote_lost"), 4, "each call was found lost");
    assert_eq!(figure(step, "remote_retries"), 4, "and sent again once");
    assert_eq!(figure(step, "remote_calls"), 8);
    assert_eq!(figure(step, "remote_fallbacks"), 0);
    assert_eq!(figure(step, "remote_timeouts"), 0);
    drop(survivor);
    drop(server);
}

/// An HTTP sink that reads requests and never answers; it counts the requests it got.
fn mute_sink() -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/sink", listener.local_addr().unwrap());
    let got = Arc::new(AtomicUsize::new(0));
    let counted = got.clone();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { break };
            let _ = stream.set_read_timeout(Some(Duration::from_secs(20)));
            let mut first = [0_u8; 4];
            if stream.read_exact(&mut first).is_ok() && &first == b"POST" {
                counted.fetch_add(1, Ordering::SeqCst);
            }
            // Held open, unanswered, until the test ends.
            held.push(stream);
            if held.len() > 64 {
                break;
            }
        }
    });
    (url, got)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_killed_mid_call_of_a_kind_that_is_not_idempotent_faults_at_once_unrepeated() {
    let server = NatsServer::start("killed-notify");
    let dir = scratch("killed-notify");
    let (sink, got) = mute_sink();
    let text = remote_config(
        &server.url(),
        &format!("kind = \"notify\"\nsink = \"{sink}\"\nfallback = \"local\""),
    );
    let (path, config) = config_file(&dir, "notify.toml", &text);
    let mut doomed = WorkerProcess::start(&path);
    doomed.wait_ready();
    let plan = client_plan(&config).await;
    let call = send(&plan, 7);
    // The notification reached the sink: the call is inside the handler on the worker.
    let deadline = Instant::now() + Duration::from_secs(10);
    while got.load(Ordering::SeqCst) == 0 {
        assert!(
            Instant::now() < deadline,
            "the worker never notified the sink"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let survivor = WorkerProcess::start(&path);
    survivor.wait_ready();
    doomed.kill();
    let out = answered(call, "the notify call").await;
    let Outcome::Fault(fault) = &out else {
        panic!("expected RemoteCallLost, got {}", describe(&out))
    };
    assert_eq!(
        fault.kind(),
        FaultKind::RemoteCallLost,
        "{}",
        fault.reason()
    );
    assert!(
        fault.reason().contains("not idempotent"),
        "{}",
        fault.reason()
    );
    let step = step(&plan);
    assert_eq!(figure(step, "remote_lost"), 1);
    assert_eq!(figure(step, "remote_retries"), 0, "not sent again");
    assert_eq!(
        figure(step, "remote_fallbacks"),
        0,
        "not run locally either"
    );
    assert_eq!(figure(step, "remote_calls"), 1);
    assert_eq!(got.load(Ordering::SeqCst), 1, "the sink was notified once");
    drop(survivor);
    drop(server);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_nats_outage_sends_calls_in_flight_and_later_ones_to_the_fallback_then_remote_again() {
    let mut server = NatsServer::start("outage");
    let dir = scratch("outage");
    let text = remote_config(
        &server.url(),
        "kind = \"sleep\"\nmillis = 1500\nfallback = \"local\"",
    );
    let (path, config) = config_file(&dir, "outage.toml", &text);
    let worker = WorkerProcess::start(&path);
    worker.wait_ready();
    let plan = client_plan(&config).await;
    let step = step(&plan).clone();
    let in_flight: Vec<_> = (1..=4).map(|id| send(&plan, id)).collect();
    wait_figure(&step, "remote_calls", 4).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    server.stop(); // SIGKILL to the nats-server we started
    for (n, call) in in_flight.into_iter().enumerate() {
        let out = answered(call, &format!("in-flight call {n}")).await;
        assert!(matches!(out, Outcome::Continue(_)), "{}", describe(&out));
    }
    assert_eq!(figure(&step, "remote_disconnects"), 4);
    assert_eq!(figure(&step, "remote_fallbacks"), 4);
    // While NATS is down, new calls run locally at once (no remote call is even tried).
    let during: Vec<_> = (10..14).map(|id| send(&plan, id)).collect();
    for (n, call) in during.into_iter().enumerate() {
        let out = answered(call, &format!("call {n} during the outage")).await;
        assert!(matches!(out, Outcome::Continue(_)), "{}", describe(&out));
    }
    assert_eq!(figure(&step, "remote_fallbacks"), 8);
    assert_eq!(figure(&step, "remote_calls"), 4);
    // Back on the same port: the service and the worker reconnect by themselves.
    server.start_again();
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut id = 100;
    loop {
        let (calls, fallbacks) = (
            figure(&step, "remote_calls"),
            figure(&step, "remote_fallbacks"),
        );
        id += 1;
        let out = answered(send(&plan, id), "a call after the restart").await;
        assert!(matches!(out, Outcome::Continue(_)), "{}", describe(&out));
        if figure(&step, "remote_calls") == calls + 1
            && figure(&step, "remote_fallbacks") == fallbacks
        {
            break; // answered by the worker
        }
        assert!(
            Instant::now() < deadline,
            "calls did not go remote again within 30 s of the restart"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    drop(worker);
    drop(server);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_whose_client_gave_up_is_counted_as_abandoned_and_timeouts_adapt() {
    let server = NatsServer::start("abandoned");
    let dir = scratch("abandoned");
    let text = format!(
        "{}[handlers.quick]\nkind = \"sleep\"\nmillis = 1\nplacement = \"remote\"\n[[service]]\nname = \"q\"\npath = \"/q\"\nbuiltin = \"echo\"\nrequest = [[\"quick\"]]\n",
        remote_config(
            &server.url(),
            "kind = \"sleep\"\nmillis = 3000\nfallback = \"fault\""
        )
    );
    let (path, config) = config_file(&dir, "abandoned.toml", &text);
    let worker = WorkerProcess::start(&path);
    worker.wait_ready();
    let services = lather_compose::build_services(&config).unwrap();
    services.link.as_ref().unwrap().connect().await.unwrap();
    let slow = Arc::new(services.plans[0].request.clone());
    let quick = Arc::new(services.plans[1].request.clone());
    // The client gives up after 300 ms: the engine drops the message's future.
    let gave_up = tokio::time::timeout(
        Duration::from_millis(300),
        run(&slow, message(1), &Limits::default()),
    )
    .await;
    assert!(gave_up.is_err(), "a 3 s handler cannot answer in 300 ms");
    let step_slow = step(&slow);
    assert_eq!(figure(step_slow, "remote_abandoned"), 1);
    assert_eq!(figure(step_slow, "remote_timeouts"), 0);
    assert_eq!(figure(step_slow, "remote_timeout_ms"), 30_000);
    // Without timeout_ms, 100 measured calls set the timeout to max(100 ms, 10 × p99).
    let step_quick = step(&quick).clone();
    for id in 0..100 {
        let out = answered(send(&quick, 1000 + id), "a quick call").await;
        assert!(matches!(out, Outcome::Continue(_)), "{}", describe(&out));
        if id < 99 {
            assert_eq!(figure(&step_quick, "remote_timeout_ms"), 30_000);
        }
    }
    let adapted = figure(&step_quick, "remote_timeout_ms");
    assert!(
        (100..30_000).contains(&adapted),
        "the timeout adapted: {adapted} ms"
    );
    drop(worker);
    drop(server);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn long_cpu_bound_calls_keep_heartbeating_and_are_not_taken_for_lost() {
    let server = NatsServer::start("cpu-heartbeats");
    let dir = scratch("cpu-heartbeats");
    // More CPU-bound calls at once than the worker has runtime threads, each much longer
    // than three heartbeat intervals.
    let text = remote_config(
        &server.url(),
        "kind = \"cpu-burn\"\nmicros = 800000\nfallback = \"fault\"",
    );
    let (path, config) = config_file(&dir, "cpu.toml", &text);
    let worker = WorkerProcess::start(&path);
    worker.wait_ready();
    let plan = client_plan(&config).await;
    // The worker's runtime has one thread per core: two calls more than that.
    let cores = std::thread::available_parallelism().map_or(2, usize::from);
    let n = u128::try_from(cores.min(46) + 2).unwrap();
    let calls: Vec<_> = (1..=n).map(|id| send(&plan, id)).collect();
    for (n, call) in calls.into_iter().enumerate() {
        let out = tokio::time::timeout(Duration::from_secs(60), call)
            .await
            .unwrap_or_else(|_| panic!("call {n}: no answer within 60 s"))
            .unwrap();
        assert!(matches!(out, Outcome::Continue(_)), "{}", describe(&out));
    }
    let step = step(&plan);
    assert_eq!(
        figure(step, "remote_lost"),
        0,
        "heartbeats kept every call alive"
    );
    assert_eq!(u128::from(figure(step, "remote_calls")), n);
    drop(worker);
    drop(server);
}
