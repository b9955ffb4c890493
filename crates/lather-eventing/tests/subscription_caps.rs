//! The subscription caps under concurrency: many Subscribes at once against a small global
//! cap (and a per-identity quota) grant exactly the cap, never one more.

use bytes::Bytes;
use lather_envelope::{Envelope, Limits};
use lather_eventing::{EventSource, SourceSettings};
use lather_test_util::ScratchDir;
use std::sync::Arc;

const WSE11: &str = "http://www.w3.org/2011/03/ws-evt";
const WSA10: &str = "http://www.w3.org/2005/08/addressing";

fn subscribe() -> Envelope {
    // The sink is never reached: a closed port on loopback (allowed here).
    let text = format!(
        r#"<s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope"><s:Header><wsa:Action xmlns:wsa="{WSA10}">{WSE11}/Subscribe</wsa:Action></s:Header><s:Body><wse:Subscribe xmlns:wse="{WSE11}" xmlns:wsa="{WSA10}"><wse:Delivery><wse:NotifyTo><wsa:Address>http://127.0.0.1:9/n</wsa:Address></wse:NotifyTo></wse:Delivery></wse:Subscribe></s:Body></s:Envelope>"#
    );
    Envelope::parse(Bytes::from(text), &Limits::default()).unwrap()
}

/// Runs `n` Subscribes at once (identity by index via `who`); returns how many were granted.
async fn race(source: &EventSource, n: usize, who: fn(usize) -> Option<String>) -> usize {
    let envelope = Arc::new(subscribe());
    let barrier = Arc::new(tokio::sync::Barrier::new(n));
    let mut tasks = Vec::new();
    for i in 0..n {
        let (source, envelope, barrier) = (source.clone(), envelope.clone(), barrier.clone());
        tasks.push(tokio::spawn(async move {
            barrier.wait().await;
            source
                .handle_for(&envelope, "http://x/events", who(i).as_deref())
                .await
                .is_ok()
        }));
    }
    let mut granted = 0;
    for task in tasks {
        granted += usize::from(task.await.unwrap());
    }
    granted
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_subscribes_get_exactly_the_global_cap() {
    // A store makes each Subscribe wait for its write between the check and the insert.
    let dir = ScratchDir::new("caps");
    let path = dir.join("subs.redb");
    let source = EventSource::open(SourceSettings {
        store: Some(path.clone()),
        max_subscriptions: 7,
        ..SourceSettings::allowing_loopback()
    })
    .unwrap();
    let granted = race(&source, 64, |i| Some(format!("client-{i}"))).await;
    assert_eq!(granted, 7);
    assert_eq!(source.subscriptions().len(), 7);
    // Full stays full.
    assert_eq!(race(&source, 8, |_| None).await, 0);
    drop(source);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_subscribes_of_one_identity_get_exactly_its_quota() {
    let dir = ScratchDir::new("quota");
    let path = dir.join("subs.redb");
    let source = EventSource::open(SourceSettings {
        store: Some(path.clone()),
        max_subscriptions_per_identity: 5,
        ..SourceSettings::allowing_loopback()
    })
    .unwrap();
    assert_eq!(race(&source, 40, |_| Some("10.0.0.9".into())).await, 5);
    // Another identity has its own quota; no identity only the global cap.
    assert_eq!(race(&source, 40, |_| Some("10.0.0.8".into())).await, 5);
    assert_eq!(race(&source, 3, |_| None).await, 3);
    assert_eq!(source.subscriptions().len(), 13);
    drop(source);
}
