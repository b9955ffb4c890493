//! The progress frames a worker sends, watched on the wire with a real `nats-server`: a
//! handler that completes without waiting is answered with the answer frame alone (it
//! tells the caller all an acknowledgement would), one that waits is acknowledged first
//! and heartbeated until its answer. A caller that gets no acknowledgement and only the
//! answer takes it as answered.

use bytes::Bytes;
use futures_util::StreamExt;
use lather_config::{Config, NatsConfig};
use lather_envelope::{Envelope, Limits};
use lather_pipeline::{
    Access, Context, Direction, Handler, HandlerFuture, Message, Options, Parts, Verdict,
};
use lather_remote::frame::{ProgressKind, RemoteVerdict, Reply};
use lather_remote::worker::{Hosted, serve_bounded};
use lather_remote::{Link, RemoteHandler, request_for};
use lather_test_util::nats::NatsServer;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Answers at once, or after `wait` when it is not zero.
#[derive(Debug)]
struct Pause {
    wait: Duration,
}

impl Handler for Pause {
    fn access(&self) -> Access {
        Access::read_only(Parts::none().body())
    }

    fn call<'a>(&'a self, _message: &'a Message) -> HandlerFuture<'a> {
        Box::pin(async move {
            if !self.wait.is_zero() {
                tokio::time::sleep(self.wait).await;
            }
            Verdict::proceed()
        })
    }
}

fn nats(url: &str) -> NatsConfig {
    let text = format!("[nats]\nurl = \"{url}\"\nheartbeat_ms = 20\n");
    Config::from_toml(&text, "t.toml")
        .unwrap_or_else(|e| panic!("{e}"))
        .nats
        .unwrap()
}

fn message() -> Message {
    let xml = "<soap:Envelope xmlns:soap=\"http://schemas.xmlsoap.org/soap/envelope/\"><soap:Body><e:echo xmlns:e=\"urn:e\">hi</e:echo></soap:Body></soap:Envelope>";
    let envelope = Envelope::parse(Bytes::from_static(xml.as_bytes()), &Limits::default()).unwrap();
    let context = Context {
        id: 7,
        service: "t".into(),
        action: None,
        client: None,
        direction: Direction::Request,
        request: None,
        properties: Default::default(),
    };
    Message::new(envelope, context)
}

fn hosted(name: &str, wait: Duration) -> Hosted {
    Hosted {
        name: name.to_owned(),
        handler: Arc::new(Pause { wait }),
        options: Options::default(),
    }
}

/// Sends one request frame for `handler` (heartbeats every 20 ms) from a plain client and
/// gives the kinds of every frame that came back, in order, up to the answer.
async fn frames_back(client: &async_nats::Client, link: &Link, handler: &str) -> Vec<&'static str> {
    let access = Access::read_only(Parts::none().body());
    let deadline = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
        + 10_000;
    let mut request = request_for(handler, &access, &message(), 0, deadline);
    request.heartbeat_ms = 20;
    let inbox = client.new_inbox();
    let mut replies = client.subscribe(inbox.clone()).await.unwrap();
    client
        .publish_with_reply(link.subject(handler), inbox, request.encode().unwrap())
        .await
        .unwrap();
    let mut kinds = Vec::new();
    loop {
        let frame = tokio::time::timeout(Duration::from_secs(10), replies.next())
            .await
            .expect("the worker answers within 10 s")
            .expect("the reply subscription stays open");
        match Reply::decode(frame.payload).expect("a readable frame") {
            Reply::Progress(p) => {
                assert_eq!(p.id, request.id, "progress for this request");
                kinds.push(match p.kind {
                    ProgressKind::Ack => "ack",
                    ProgressKind::Heartbeat => "heartbeat",
                });
            }
            Reply::Answer(answer) => {
                assert_eq!(answer.id, request.id);
                assert!(matches!(answer.verdict, RemoteVerdict::Continue(_)));
                kinds.push("answer");
                return kinds;
            }
        }
    }
}

#[tokio::test(flavor = "current_thread")]
async fn a_worker_acknowledges_only_what_is_not_answered_at_once() {
    let server = NatsServer::start("worker-progress");
    let config = nats(&server.url());
    let link = Link::new(&config);
    link.connect().await.unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = {
        let link = Link::new(&config);
        link.connect().await.unwrap();
        tokio::spawn(async move {
            let hosted = vec![
                hosted("quick", Duration::ZERO),
                hosted("slow", Duration::from_millis(90)),
            ];
            serve_bounded(&link, hosted, Limits::default(), 4, async {
                let _ = stopped.await;
            })
            .await
            .unwrap();
        })
    };
    let client = link.client().unwrap().clone();
    // The worker subscribes, then flushes: wait until a request finds it.
    let mut quick = Vec::new();
    for _ in 0..100 {
        let probe = client
            .request(link.subject("quick"), Bytes::from_static(b"x"))
            .await;
        if probe.is_ok() {
            quick = frames_back(&client, &link, "quick").await;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        quick,
        ["answer"],
        "a handler done at once: the answer alone"
    );

    let slow = frames_back(&client, &link, "slow").await;
    assert_eq!(
        slow.first(),
        Some(&"ack"),
        "acknowledged before it waits: {slow:?}"
    );
    assert_eq!(slow.last(), Some(&"answer"));
    let beats = slow.iter().filter(|k| **k == "heartbeat").count();
    assert!(
        beats >= 2,
        "a 90 ms handler heartbeated every 20 ms at least twice: {slow:?}"
    );

    // The caller's side: an answer with no acknowledgement before it is an answer.
    let remote = RemoteHandler::new(
        "quick",
        Arc::new(Pause {
            wait: Duration::ZERO,
        }),
        Arc::new(link),
        lather_config::Fallback::Fault,
        Duration::from_secs(5),
        Limits::default(),
    );
    let (verdict, split) = remote.call_split(&message()).await;
    assert!(matches!(verdict, Verdict::Continue(_)), "{verdict:?}");
    assert!(split.is_some(), "answered by the worker, not the fallback");
    assert_eq!(
        remote
            .counters()
            .lost
            .load(std::sync::atomic::Ordering::Relaxed),
        0
    );

    let _ = stop.send(());
    serving.await.unwrap();
}
