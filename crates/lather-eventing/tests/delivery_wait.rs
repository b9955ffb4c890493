//! `SourceSettings::delivery_wait` over real loopback sockets: notifications that come
//! sooner than the wait after a write are held back, still counted against the sink's
//! bounds, and go out together once it has passed; a full batch goes at once; what is held
//! back when the subscription ends on a TCP binding goes out at once, before
//! SubscriptionEnd.

use crate::support::{
    Seen, WSA10, WSE11, envelope, event, http_sink, raw_sink, subscribe, until, until_closed,
};
use lather_eventing::binding::tcp::decode_soap_frame;
use lather_eventing::{EventSource, SourceSettings};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// The most notifications one write takes (the delivery task's batch).
const MAX_BATCH: u32 = 64;

fn waiting(wait: Duration) -> EventSource {
    EventSource::open(SourceSettings {
        delivery_wait: wait,
        ..SourceSettings::allowing_loopback()
    })
    .unwrap()
}

/// Subscribes `notify` to `source` (WS-Eventing 2011), its SubscriptionEnd to `end_to`.
async fn subscribed(source: &EventSource, notify: &str, end_to: Option<&str>) {
    source
        .handle(&subscribe(WSE11, notify, end_to, "", ""), "http://h/e")
        .await
        .unwrap();
}

/// A new HTTP sink subscribed to `source`: the bodies it receives.
async fn subscribed_http_sink(source: &EventSource) -> mpsc::UnboundedReceiver<String> {
    let (addr, bodies) = http_sink().await;
    subscribed(source, &format!("http://{addr}/n"), None).await;
    bodies
}

/// The next body the HTTP sink receives, within 10 s.
async fn next(bodies: &mut mpsc::UnboundedReceiver<String>) -> String {
    tokio::time::timeout(Duration::from_secs(10), bodies.recv())
        .await
        .expect("a notification within 10 s")
        .unwrap()
}

#[tokio::test]
async fn notifications_soon_after_a_write_wait_and_go_out_together() {
    let wait = Duration::from_secs(2);
    let source = waiting(wait);
    let mut bodies = subscribed_http_sink(&source).await;
    let first_published = Instant::now();
    assert_eq!(source.publish_event(event(0, 20)), 1);
    // The first write follows no other: it goes at once.
    assert!(next(&mut bodies).await.contains(r#"n="0""#));
    assert_eq!(source.publish_event(event(1, 20)), 1);
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(source.publish_event(event(2, 20)), 1);
    // Both are held back by the delivery task, and still count against the sink's bounds.
    until("both held back and counted", || {
        source.sink_depths().queued_notifications == 2
    })
    .await;
    assert!(
        bodies.try_recv().is_err(),
        "nothing went out before the wait"
    );
    let second = next(&mut bodies).await;
    let third = next(&mut bodies).await;
    assert!(second.contains(r#"n="1""#), "{second}");
    assert!(third.contains(r#"n="2""#), "{third}");
    // Written no sooner than `wait` after the first write, which followed its publish,
    // and together: the third did not wait a second interval after the second.
    let after = first_published.elapsed();
    assert!(after >= wait, "arrived {after:?} after the first publish");
    assert!(
        after < 2 * wait,
        "arrived {after:?} after the first publish"
    );
    until("the answered notifications let go", || {
        source.sink_depths().queued_notifications == 0
    })
    .await;
}

#[tokio::test]
async fn a_full_batch_goes_at_once_and_the_rest_waits() {
    let source = waiting(Duration::from_secs(60));
    let mut bodies = subscribed_http_sink(&source).await;
    assert_eq!(source.publish_event(event(0, 20)), 1);
    assert!(next(&mut bodies).await.contains(r#"n="0""#));
    // Published without yielding: the delivery task takes a full batch and one more.
    for n in 1..=MAX_BATCH + 1 {
        assert_eq!(source.publish_event(event(n, 20)), 1);
    }
    for n in 1..=MAX_BATCH {
        let body = next(&mut bodies).await;
        assert!(body.contains(&format!(r#"n="{n}""#)), "{n}: {body}");
    }
    let rest = tokio::time::timeout(Duration::from_secs(1), bodies.recv()).await;
    assert!(rest.is_err(), "the one beyond a full batch waits: {rest:?}");
    // Held back and counted; the 64 written are answered and let go.
    until(
        "the one beyond held back and counted, the 64 let go",
        || source.sink_depths().queued_notifications == 1,
    )
    .await;
}

#[tokio::test]
async fn what_is_held_back_goes_out_before_subscription_end() {
    let source = waiting(Duration::from_secs(60));
    let (addr, mut seen) = raw_sink().await;
    let address = format!("soap.tcp://{addr}");
    subscribed(&source, &address, Some(&address)).await;
    assert_eq!(source.publish_event(event(0, 20)), 1);
    // The first notification's bytes, before the next is published.
    let mut first = match tokio::time::timeout(Duration::from_secs(10), seen.recv()).await {
        Ok(Some(Seen::Data(0, data))) => data,
        other => panic!("the first notification: {other:?}"),
    };
    assert_eq!(source.publish_event(event(1, 20)), 1);
    tokio::time::sleep(Duration::from_millis(200)).await;
    // Whatever arrived since (the rest of the first frame, if its read was split) holds no
    // second frame: the second notification is held back.
    while let Ok(Seen::Data(0, more)) = seen.try_recv() {
        first.extend_from_slice(&more);
    }
    assert_eq!(soap_frames(&first).len(), 1, "held back, not written");
    assert_eq!(source.sink_depths().queued_notifications, 1);
    source.shut_down("going away").await;
    // Within until_closed's 10 s, not the wait's 60 s.
    let mut connections = until_closed(&mut seen, 1).await;
    connections[0].splice(0..0, first);
    let actions = soap_frames(&connections[0]);
    assert_eq!(actions.len(), 3, "{actions:?}");
    assert!(actions[0].1.contains(r#"n="0""#), "{actions:?}");
    assert!(actions[1].1.contains(r#"n="1""#), "{actions:?}");
    assert_eq!(actions[2].0, format!("{WSE11}/SubscriptionEnd"));
}

/// The (wsa:Action, body) of each whole SOAP-over-TCP frame in `bytes`.
fn soap_frames(mut bytes: &[u8]) -> Vec<(String, String)> {
    let mut frames = Vec::new();
    while let Some((frame, used)) = decode_soap_frame(bytes).unwrap() {
        let env = envelope(&frame);
        let action = env
            .header(&lather_envelope::QName::new(WSA10, "Action"))
            .and_then(|b| env.header_text(b))
            .unwrap();
        let body = String::from_utf8(env.extract_payload().unwrap().to_vec()).unwrap();
        frames.push((action, body));
        bytes = &bytes[used..];
    }
    frames
}
