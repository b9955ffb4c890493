//! One big event to many sinks that never read is held once, not once per sink: the
//! notifications share the event's bytes (alone in its test binary, so the process's
//! memory is this test's).

use bytes::Bytes;
use lather_envelope::{Envelope, Limits};
use lather_eventing::{Event, EventSource, SourceSettings};
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio::net::TcpListener;

const WSE11: &str = "http://www.w3.org/2011/03/ws-evt";
const WSA10: &str = "http://www.w3.org/2005/08/addressing";

fn subscribe(notify: &str) -> Envelope {
    let text = format!(
        r#"<s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope"><s:Body><wse:Subscribe xmlns:wse="{WSE11}" xmlns:wsa="{WSA10}"><wse:Delivery><wse:NotifyTo><wsa:Address>{notify}</wsa:Address></wse:NotifyTo></wse:Delivery></wse:Subscribe></s:Body></s:Envelope>"#
    );
    Envelope::parse(Bytes::from(text), &Limits::default()).unwrap()
}

/// A sink that accepts every connection and never reads from it; counts the connections.
async fn mute_sink() -> (SocketAddr, Arc<AtomicUsize>, tokio::task::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let accepted = Arc::new(AtomicUsize::new(0));
    let count = accepted.clone();
    let held = tokio::spawn(async move {
        let mut kept = Vec::new();
        while let Ok((s, _)) = listener.accept().await {
            count.fetch_add(1, Ordering::SeqCst);
            kept.push(s);
        }
    });
    (addr, accepted, held)
}

/// This process's resident memory, in bytes.
fn rss() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
    let pages: u64 = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
    pages * 4096
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_big_event_to_many_mute_sinks_is_held_once() {
    const SINKS: usize = 2000;
    const SIZE: usize = 200 * 1024;
    let source = EventSource::open(SourceSettings::allowing_loopback()).unwrap();
    let (addr, accepted, held) = mute_sink().await;
    for _ in 0..SINKS {
        source
            .handle(&subscribe(&format!("http://{addr}/n")), "http://h/e")
            .await
            .unwrap();
    }
    assert_eq!(source.delivery_tasks(), SINKS);
    let before = rss();
    let event = Event {
        payload: Bytes::from(format!(
            r#"<q:Big xmlns:q="urn:q">{}</q:Big>"#,
            "x".repeat(SIZE)
        )),
        action: Some("urn:q:Big".into()),
        topics: Vec::new(),
        headers: Vec::new(),
    };
    assert_eq!(source.try_publish_event(event).unwrap(), SINKS);
    // Every sink has its connection and has written (or is writing) the notification.
    let connected = tokio::time::timeout(Duration::from_secs(10), async {
        while accepted.load(Ordering::SeqCst) < SINKS {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(connected.is_ok(), "not every sink connected within 10 s");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let queued = source.queued_bytes();
    assert!(
        (SIZE as u64..2 * SIZE as u64).contains(&queued),
        "{queued} bytes queued for one event of {SIZE}"
    );
    // Rendered per sink this would be 2000 × 200 KiB ≈ 400 MiB more.
    let grown = rss().saturating_sub(before);
    assert!(
        grown < 100 * 1024 * 1024,
        "memory grew by {grown} bytes for one event"
    );
    held.abort();
}
