//! The event source's delivery bounds over real HTTP: the publish answer says what it
//! keeps (`durable="false"`: queued in memory), and a publish beyond `queue_bytes_total`
//! is refused with PublishQueueFull, 503 and `Retry-After`, and counted in `/metrics`.

use crate::support;

use lather_envelope::SoapVersion;
use support::{event_source, post_with_action as post};
use tokio::net::TcpListener;

const WSE11: &str = "http://www.w3.org/2011/03/ws-evt";
const WSA10: &str = "http://www.w3.org/2005/08/addressing";

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
    let subscribe = support::envelope(
        soap,
        &format!(r#"<wsa:Action xmlns:wsa="{WSA10}">{WSE11}/Subscribe</wsa:Action>"#),
        &format!(
            r#"<wse:Subscribe xmlns:wse="{WSE11}" xmlns:wsa="{WSA10}"><wse:Delivery><wse:NotifyTo><wsa:Address>http://{mute_addr}/n</wsa:Address></wse:NotifyTo></wse:Delivery></wse:Subscribe>"#
        ),
    );
    let answer = post(
        server.addr,
        "/events",
        soap,
        &format!("{WSE11}/Subscribe"),
        subscribe,
    )
    .await;
    assert_eq!(answer.status, 200, "{}", answer.text());
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
