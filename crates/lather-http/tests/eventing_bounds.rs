//! The event source's delivery bounds over real HTTP: the publish answer says what it
//! keeps (`durable="false"`: queued in memory), and a publish beyond `queue_bytes_total`
//! is refused with PublishQueueFull, 503 and `Retry-After`, and counted in `/metrics`;
//! `delivery_wait_ms` holds back a notification that follows a write sooner.

use crate::support;

use lather_envelope::SoapVersion;
use support::{event_source, post_with_action as post};
use tokio::net::TcpListener;

#[tokio::test]
async fn a_publish_beyond_queue_bytes_total_is_refused_with_503_and_retry_after() {
    let server = event_source("queue_bytes_total = 300000\nsink_write_timeout_ms = 60000\n").await;
    // A sink that accepts and never reads nor answers: what is sent to it stays held.
    let mute = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let mute_addr = mute.local_addr().unwrap();
    let held = tokio::spawn(async move {
        let mut kept = Vec::new();
        while let Ok((s, _)) = mute.accept().await {
            kept.push(s);
        }
    });
    let soap = SoapVersion::V12;
    support::subscribe_events(server.addr, &format!("http://{mute_addr}/n")).await;
    // 100 KB events: the first ones are queued (in memory, and the answer says so), then
    // the source's bound refuses; never more than 10 tries.
    let event = format!(r#"<e:Big xmlns:e="urn:e">{}</e:Big>"#, "x".repeat(100_000));
    let mut accepted = 0;
    let refused = loop {
        assert!(accepted < 10, "no refusal after {accepted} publishes");
        let answer = post(
            server.addr,
            "/events/publish",
            soap,
            "urn:e:Big",
            support::envelope(soap, "", &event),
        )
        .await;
        if answer.status != 200 {
            break answer;
        }
        assert!(
            answer.text().contains(r#"queued="1" durable="false""#),
            "{}",
            answer.text()
        );
        accepted += 1;
    };
    assert!(accepted >= 2, "{accepted}");
    assert_eq!(refused.status, 503, "{}", refused.text());
    assert!(refused.headers.contains_key("retry-after"));
    assert!(
        refused.text().contains("PublishQueueFull"),
        "{}",
        refused.text()
    );
    assert!(
        refused.text().contains("queue_bytes_total"),
        "{}",
        refused.text()
    );
    // The metrics tell the refusal, the live delivery task and the bytes held.
    let metrics = support::get(server.addr, "/metrics").await;
    let text = metrics.text();
    assert!(
        text.contains(r#"lather_eventing_refused_publishes_total{service="events"} 1"#),
        "{text}"
    );
    assert!(
        text.contains(r#"lather_eventing_delivery_tasks{service="events"} 1"#),
        "{text}"
    );
    assert!(
        text.contains(r#"lather_eventing_queued_bytes{service="events"} "#),
        "{text}"
    );
    held.abort();
}

#[tokio::test]
async fn delivery_wait_ms_holds_back_a_notification_that_follows_a_write_soon() {
    let server = event_source("delivery_wait_ms = 1000\n").await;
    // A sink that sends down a channel when each notification arrived.
    let (arrived_tx, mut arrived) = tokio::sync::mpsc::unbounded_channel();
    let sink = lather_test_util::http::serve(move |_req: http::Request<hyper::body::Incoming>| {
        let _ = arrived_tx.send(std::time::Instant::now());
        async { lather_test_util::http::empty(http::StatusCode::ACCEPTED) }
    })
    .await;
    let soap = SoapVersion::V12;
    support::subscribe_events(server.addr, &format!("http://{sink}/n")).await;
    let publish = || {
        post(
            server.addr,
            "/events/publish",
            soap,
            "urn:e:E",
            support::envelope(soap, "", r#"<e:E xmlns:e="urn:e"/>"#),
        )
    };
    let first_published = std::time::Instant::now();
    assert_eq!(publish().await.status, 200);
    next(&mut arrived).await;
    assert_eq!(publish().await.status, 200);
    let second = next(&mut arrived).await;
    // Written no sooner than a second after the first write, which followed its publish.
    let after = second.duration_since(first_published);
    assert!(after >= std::time::Duration::from_secs(1), "{after:?}");
}

/// When the next notification arrived at the sink, within 10 s.
async fn next(
    arrived: &mut tokio::sync::mpsc::UnboundedReceiver<std::time::Instant>,
) -> std::time::Instant {
    tokio::time::timeout(std::time::Duration::from_secs(10), arrived.recv())
        .await
        .expect("a notification within 10 s")
        .unwrap()
}
