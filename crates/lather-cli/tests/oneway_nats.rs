//! Oneway remote handlers through the JetStream work queue, against a real `nats-server`
//! with JetStream (started by `nats/`): every message handled on a worker, at least once
//! across a worker killed mid-handling, the message id as idempotency key, and the
//! fallback when NATS is down or the stream is full.

use crate::workers;
use lather_test_util::{ScratchDir, nats};

use bytes::Bytes;
use lather_config::Config;
use lather_envelope::{Envelope, Limits};
use lather_pipeline::{Context, Direction, Message, Outcome, Plan, Step, run};
use lather_remote::Link;
use lather_remote::worker::Hosted;
use nats::NatsServer;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;
use workers::{check, figure};

fn scratch(name: &str) -> ScratchDir {
    ScratchDir::new(&format!("oneway-{name}"))
}

/// An HTTP sink on 127.0.0.1 for `notify`: it counts the notifications per message id
/// (the `<n:MessageId>` of each) when they arrive, then answers 200 after `delay`.
#[derive(Clone)]
struct Sink {
    addr: SocketAddr,
    seen: Arc<Mutex<HashMap<u128, u32>>>,
}

impl Sink {
    async fn start(delay: Duration) -> Sink {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let seen = Arc::new(Mutex::new(HashMap::new()));
        let counts = seen.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(serve_sink(stream, counts.clone(), delay));
            }
        });
        Sink { addr, seen }
    }

    fn url(&self) -> String {
        format!("http://{}/sink", self.addr)
    }

    fn counts(&self) -> HashMap<u128, u32> {
        self.seen.lock().unwrap().clone()
    }

    fn distinct(&self) -> usize {
        self.seen.lock().unwrap().len()
    }
}

/// One keep-alive HTTP/1.1 connection of the sink: requests with a Content-Length body.
async fn serve_sink(mut stream: TcpStream, seen: Arc<Mutex<HashMap<u128, u32>>>, delay: Duration) {
    let mut buffer = Vec::new();
    loop {
        let head_end = loop {
            if let Some(i) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
                break i + 4;
            }
            let mut chunk = [0u8; 4096];
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buffer.extend_from_slice(&chunk[..n]),
            }
        };
        let head = String::from_utf8_lossy(&buffer[..head_end]).to_ascii_lowercase();
        let length: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .map_or(0, |v| v.trim().parse().unwrap());
        while buffer.len() < head_end + length {
            let mut chunk = [0u8; 4096];
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buffer.extend_from_slice(&chunk[..n]),
            }
        }
        let body = String::from_utf8_lossy(&buffer[head_end..head_end + length]).into_owned();
        buffer.drain(..head_end + length);
        let id = body
            .split_once("<n:MessageId>")
            .and_then(|(_, rest)| rest.split_once("</n:MessageId>"))
            .and_then(|(hex, _)| u128::from_str_radix(hex, 16).ok())
            .expect("a notification with a MessageId");
        *seen.lock().unwrap().entry(id).or_insert(0) += 1;
        tokio::time::sleep(delay).await;
        let answer = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok";
        if stream.write_all(answer).await.is_err() {
            return;
        }
    }
}

/// A configuration with the oneway remote `notify` handler `tell` posting to `sink`,
/// run by the service `s` on requests.
fn config_text(url: &str, sink: &str, fallback: &str, nats_extra: &str) -> String {
    format!(
        "[nats]\nurl = \"{url}\"\n{nats_extra}\n[handlers.tell]\nkind = \"notify\"\nsink = \"{sink}\"\noneway = true\nplacement = \"remote\"\nfallback = \"{fallback}\"\ntimeout_ms = 500\n[[service]]\nname = \"s\"\npath = \"/s\"\nbuiltin = \"echo\"\nrequest = [[\"tell\"]]\n"
    )
}

fn message(id: u128) -> Message {
    let text = format!(
        r#"<s:Envelope xmlns:s="http://schemas.xmlsoap.org/soap/envelope/"><s:Body><o:Order xmlns:o="urn:shop"><o:Seq>{id}</o:Seq></o:Order></s:Body></s:Envelope>"#
    );
    let envelope = Envelope::parse(Bytes::from(text), &Limits::default()).unwrap();
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

async fn client_plan(config: &Config) -> Plan {
    let services = lather_compose::build_services(config).unwrap();
    services.link.as_ref().unwrap().connect().await.unwrap();
    services.plans[0].request.clone()
}

fn step_of(plan: &Plan) -> &Arc<Step> {
    &plan.stages()[0][0]
}

/// Sends message `id` through `plan`: the oneway stage does not hold it up.
async fn send(plan: &Plan, id: u128) {
    let out = run(plan, message(id), &Limits::default()).await;
    assert!(matches!(out, Outcome::Continue(_)), "message {id} answered");
}

/// Waits (at most `within`) until `done` holds.
async fn eventually(within: Duration, what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + within;
    while !done() {
        assert!(Instant::now() < deadline, "not within {within:?}: {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The messages stored in the oneway stream now.
async fn stored(config: &Config) -> u64 {
    let link = Link::new(config.nats.as_ref().unwrap());
    link.connect().await.unwrap();
    let js = async_nats::jetstream::new(link.client().unwrap().clone());
    let mut stream = js.get_stream(link.oneway_stream()).await.unwrap();
    stream.info().await.unwrap().state.messages
}

/// The handler `tell` of `config`, as a worker hosts it.
fn hosted(config: &Config) -> Hosted {
    let (handler, options) =
        lather_compose::build_handler("tell", &config.handlers["tell"], config).unwrap();
    assert!(options.oneway);
    Hosted {
        name: "tell".into(),
        handler,
        options,
    }
}

/// An in-process worker hosting the handler `tell` of `config`.
struct Worker {
    stop: Option<oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<()>,
}

impl Worker {
    async fn start(config: &Config) -> Worker {
        let link = Link::new(config.nats.as_ref().unwrap());
        link.connect().await.unwrap();
        let hosted = vec![hosted(config)];
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            let shutdown = async {
                let _ = stopped.await;
            };
            lather_remote::worker::serve(&link, hosted, Limits::default(), shutdown)
                .await
                .unwrap();
        });
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
async fn oneway_messages_queue_until_a_worker_handles_each_once_and_acks_it() {
    let server = NatsServer::start_jetstream("oneway-all");
    let sink = Sink::start(Duration::ZERO).await;
    let text = config_text(&server.url(), &sink.url(), "fault", "");
    let config = Config::from_toml(&text, "oneway.toml").unwrap();
    let plan = client_plan(&config).await;
    let step = step_of(&plan).clone();
    // No worker yet: the serving side creates the stream and the messages wait in it.
    for id in 1..=20 {
        send(&plan, id).await;
    }
    eventually(Duration::from_secs(10), "20 handed over", || {
        figure(&step, "remote_oneway_published") == 20
    })
    .await;
    assert_eq!(sink.distinct(), 0, "nothing runs without a worker");
    assert_eq!(stored(&config).await, 20);
    let worker = Worker::start(&config).await;
    for id in 21..=50 {
        send(&plan, id).await;
    }
    eventually(Duration::from_secs(10), "50 handled", || {
        sink.distinct() == 50
    })
    .await;
    let counts = sink.counts();
    assert!((1..=50).all(|id| counts.get(&id) == Some(&1)), "{counts:?}");
    // Acknowledged after handling: the work queue is empty again.
    let deadline = Instant::now() + Duration::from_secs(5);
    while stored(&config).await != 0 {
        assert!(
            Instant::now() < deadline,
            "acknowledged messages stay stored"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // The same message id again is a duplicate JetStream stores once: no second delivery.
    send(&plan, 7).await;
    eventually(Duration::from_secs(10), "duplicate acknowledged", || {
        figure(&step, "remote_oneway_published") == 51
    })
    .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        sink.counts()[&7],
        1,
        "the message id is the idempotency key"
    );
    assert_eq!(figure(&step, "remote_oneway_failed"), 0);
    assert_eq!(
        step.counters()
            .oneway_failures
            .load(std::sync::atomic::Ordering::Relaxed),
        0
    );
    worker.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oneway_hand_offs_made_together_travel_in_batches_and_are_each_handled_once() {
    let server = NatsServer::start_jetstream("oneway-batch");
    let sink = Sink::start(Duration::ZERO).await;
    let text = config_text(
        &server.url(),
        &sink.url(),
        "fault",
        "batch_max_items = 10\nbatch_wait_ms = 50\n",
    );
    let config = Config::from_toml(&text, "oneway-batch.toml").unwrap();
    let plan = client_plan(&config).await;
    let step = step_of(&plan).clone();
    for id in 1..=30 {
        send(&plan, id).await;
    }
    eventually(Duration::from_secs(10), "30 handed over", || {
        figure(&step, "remote_oneway_published") == 30
    })
    .await;
    // Fewer JetStream messages than hand-offs: some went together.
    let messages = stored(&config).await;
    assert!(messages < 30, "{messages} messages stored for 30 hand-offs");
    assert!(figure(&step, "remote_oneway_batches") >= 1);
    assert!(figure(&step, "remote_oneway_batched") >= 2);
    let worker = Worker::start(&config).await;
    eventually(Duration::from_secs(10), "30 handled", || {
        sink.distinct() == 30
    })
    .await;
    let counts = sink.counts();
    assert!((1..=30).all(|id| counts.get(&id) == Some(&1)), "{counts:?}");
    let deadline = Instant::now() + Duration::from_secs(5);
    while stored(&config).await != 0 {
        assert!(Instant::now() < deadline, "handled batches stay stored");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(figure(&step, "remote_oneway_failed"), 0);
    worker.stop().await;
}

fn lather_worker(config: &Path, concurrency: usize) -> Child {
    Command::new(env!("CARGO_BIN_EXE_lather"))
        .args([
            "worker",
            "--concurrency",
            &concurrency.to_string(),
            "--config",
        ])
        .arg(config)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start lather worker")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oneway_messages_are_all_handled_at_least_once_across_a_worker_crash() {
    let server = NatsServer::start_jetstream("oneway-crash");
    let dir = scratch("crash");
    // Each notification takes the sink 40 ms, so a worker always has some in hand.
    let sink = Sink::start(Duration::from_millis(40)).await;
    let text = config_text(&server.url(), &sink.url(), "fault", "");
    let path = dir.join("workers.toml");
    std::fs::write(&path, &text).unwrap();
    let config = Config::from_toml(&text, "workers.toml").unwrap();
    let plan = client_plan(&config).await;
    let step = step_of(&plan).clone();
    const TOTAL: u128 = 200;
    let mut doomed = lather_worker(&path, 4);
    for id in 1..=TOTAL {
        send(&plan, id).await;
    }
    eventually(Duration::from_secs(10), "all handed over", || {
        u128::from(figure(&step, "remote_oneway_published")) == TOTAL
    })
    .await;
    eventually(Duration::from_secs(10), "worker A handling", || {
        sink.distinct() >= 20
    })
    .await;
    let mut survivor = lather_worker(&path, 8);
    eventually(Duration::from_secs(10), "mid-way", || sink.distinct() >= 60).await;
    doomed.kill().unwrap(); // SIGKILL to its PID, with messages in hand
    doomed.wait().unwrap();
    let killed_at = sink.distinct();
    eventually(Duration::from_secs(20), "every message handled", || {
        sink.distinct() == usize::try_from(TOTAL).unwrap()
    })
    .await;
    // What the killed worker had in hand stays in the stream until its ack wait (timeout
    // 500 ms + 1 s) has passed and the survivor has handled and acknowledged it.
    let deadline = Instant::now() + Duration::from_secs(20);
    while stored(&config).await != 0 {
        assert!(Instant::now() < deadline, "messages left unacknowledged");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let counts = sink.counts();
    assert!((1..=TOTAL).all(|id| counts.contains_key(&id)), "none lost");
    let repeated = counts.values().filter(|&&n| n > 1).count();
    eprintln!("killed after {killed_at} distinct; {repeated} handled more than once");
    assert!(
        repeated >= 1,
        "what the killed worker had in hand was redelivered to the survivor"
    );
    assert_eq!(figure(&step, "remote_oneway_failed"), 0);
    // The survivor drains on SIGTERM and exits 0.
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
    assert_eq!(stored(&config).await, 0, "every message acknowledged");
    drop(server);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nats_down_or_a_full_stream_sends_oneway_messages_to_the_fallback() {
    let mut server = NatsServer::start_jetstream("oneway-down");
    let sink = Sink::start(Duration::ZERO).await;
    // A stream of 3 messages, no worker: the 4th and 5th are refused (discard new).
    let text = config_text(
        &server.url(),
        &sink.url(),
        "local",
        "oneway_max_messages = 3",
    );
    let config = Config::from_toml(&text, "full.toml").unwrap();
    let local = client_plan(&config).await;
    let step = step_of(&local).clone();
    for id in 1..=5 {
        send(&local, id).await;
    }
    eventually(Duration::from_secs(10), "5 handed over or run", || {
        figure(&step, "remote_oneway_published") + figure(&step, "remote_oneway_failed") == 5
    })
    .await;
    assert_eq!(figure(&step, "remote_oneway_published"), 3);
    assert_eq!(figure(&step, "remote_oneway_failed"), 2);
    eventually(Duration::from_secs(5), "2 run locally", || {
        sink.distinct() == 2
    })
    .await;
    assert_eq!(stored(&config).await, 3);

    // NATS down: `fallback = "local"` runs it here, `"fault"` counts a oneway failure.
    let faulting = config_text(
        &server.url(),
        &sink.url(),
        "fault",
        "oneway_max_messages = 3",
    );
    let faulting = client_plan(&Config::from_toml(&faulting, "fault.toml").unwrap()).await;
    server.stop();
    tokio::time::sleep(Duration::from_millis(200)).await;
    send(&local, 100).await;
    send(&faulting, 101).await;
    eventually(
        Duration::from_secs(5),
        "run locally while NATS is down",
        || sink.counts().contains_key(&100),
    )
    .await;
    assert_eq!(figure(&step, "remote_oneway_failed"), 3);
    let faulted = step_of(&faulting).clone();
    eventually(Duration::from_secs(5), "oneway failure counted", || {
        faulted
            .counters()
            .oneway_failures
            .load(std::sync::atomic::Ordering::Relaxed)
            == 1
    })
    .await;
    assert_eq!(figure(&faulted, "remote_oneway_failed"), 1);
    assert!(
        !sink.counts().contains_key(&101),
        "the faulting one did not run"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_never_acknowledged_is_terminated_unhandled_on_its_last_delivery() {
    use async_nats::jetstream::consumer::PullConsumer;
    use futures_util::StreamExt;
    use lather_remote::oneway_worker::{MAX_DELIVER, consumer_name, prepare};
    let server = NatsServer::start_jetstream("oneway-poison");
    let sink = Sink::start(Duration::ZERO).await;
    // timeout_ms = 100: JetStream redelivers after 1.1 s without an acknowledgement.
    let text = config_text(&server.url(), &sink.url(), "fault", "")
        .replace("timeout_ms = 500", "timeout_ms = 100");
    let config = Config::from_toml(&text, "poison.toml").unwrap();
    let plan = client_plan(&config).await;
    send(&plan, 9).await;
    eventually(Duration::from_secs(10), "handed over", || {
        figure(step_of(&plan), "remote_oneway_published") == 1
    })
    .await;
    // The worker's consumer, taken by "workers" that die holding the message.
    let link = Link::new(config.nats.as_ref().unwrap());
    link.connect().await.unwrap();
    drop(prepare(&link, vec![hosted(&config)]).await.unwrap());
    let js = async_nats::jetstream::new(link.client().unwrap().clone());
    let stream = js.get_stream(link.oneway_stream()).await.unwrap();
    let consumer: PullConsumer = stream.get_consumer(&consumer_name("tell")).await.unwrap();
    for delivery in 1..MAX_DELIVER {
        let mut batch = consumer
            .batch()
            .max_messages(1)
            .expires(Duration::from_secs(3))
            .messages()
            .await
            .unwrap();
        let message = batch.next().await.expect("redelivered").unwrap();
        assert_eq!(message.info().unwrap().delivered, delivery);
        // Not acknowledged: as if the worker died.
    }
    // The last delivery goes to a real worker, which terminates it without running it.
    let worker = Worker::start(&config).await;
    let deadline = Instant::now() + Duration::from_secs(10);
    while stored(&config).await != 0 {
        assert!(Instant::now() < deadline, "the message was not terminated");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(
        sink.distinct(),
        0,
        "a message that killed its workers is not run again"
    );
    worker.stop().await;
}

#[test]
fn check_shows_a_oneway_remote_handler_on_its_work_queue_subject() {
    let dir = scratch("check");
    let path = dir.join("check.toml");
    std::fs::write(
        &path,
        "[nats]\nurl = \"nats://127.0.0.1:4222\"\nsubject_prefix = \"edge\"\n[handlers.log]\nkind = \"logging\"\noneway = true\nplacement = \"remote\"\n",
    )
    .unwrap();
    let out = check(&path);
    assert_eq!(out.status.code(), Some(0));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("remote work queue on edge.oneway.log, fallback fault"),
        "{stdout}"
    );
}
