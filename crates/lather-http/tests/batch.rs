//! Message batching: one request carrying N operations is answered with N results in
//! order, each item run through the service's stages as a message of its own, one failing
//! without failing the others; malformed or oversize batches are refused whole; the Rust
//! client's `batch()` gives each call's answer.

use crate::support;

use bytes::Bytes;
use lather_client::{Call, Client};
use lather_envelope::{FaultKind, SoapVersion};
use support::*;

/// Echo, with a monitor counting every message by operation and a route that refuses the
/// operation `{urn:m}guarded` unless authenticated (never here).
const SERVICE: &str = "[handlers.mon]\nkind = \"monitor\"\n\n[handlers.auth]\nkind = \"require-identity\"\n\n\
    [[service]]\nname = \"echo\"\npath = \"/echo\"\nbuiltin = \"echo\"\nrequest = [[\"mon\"]]\n\n\
    [[service.route]]\noperation = \"{urn:m}guarded\"\nrequest = [[\"mon\"], [\"auth\"]]\n";

fn echo_item(text: &str) -> String {
    format!(
        r#"<lb:Item><ns:echo xmlns:ns="urn:lather:echo"><text>{text}</text></ns:echo></lb:Item>"#
    )
}

async fn batch(server: &TestServer, items: &str) -> Answer {
    let payload = format!(r#"<lb:Batch xmlns:lb="urn:lather:batch">{items}</lb:Batch>"#);
    post(
        server.addr,
        "/echo",
        SoapVersion::V12,
        envelope(SoapVersion::V12, "", &payload),
    )
    .await
}

#[tokio::test]
async fn each_item_is_answered_in_order_and_one_fault_does_not_fail_the_others() {
    let server = TestServer::start(SERVICE).await;
    let items = format!(
        "{}<lb:Item><lb:Header><t:Trace xmlns:t=\"urn:t\">7</t:Trace></lb:Header><m:guarded xmlns:m=\"urn:m\"/></lb:Item>{}",
        echo_item("first"),
        echo_item("third")
    );
    let answer = batch(&server, &items).await;
    assert_eq!(answer.status, 200, "{}", answer.text());
    let text = answer.text();
    let results: Vec<&str> = text.split("<lb:Result ").skip(1).collect();
    assert_eq!(results.len(), 3, "{text}");
    assert!(
        results[0].starts_with(r#"status="200""#) && results[0].contains("first"),
        "{text}"
    );
    assert!(results[1].starts_with(r#"status="400""#), "{text}");
    assert!(
        results[1].contains("Fault") && results[1].contains("FailedAuthentication"),
        "{text}"
    );
    assert!(
        results[2].starts_with(r#"status="200""#) && results[2].contains("third"),
        "{text}"
    );
    // Every item passed the monitor as a message of its own.
    let metrics = get(server.addr, "/metrics").await;
    let count = |op: &str| {
        metric(
            metrics.text(),
            &format!(
                r#"lather_monitor_messages_total{{service="echo",handler="mon",operation="{op}"}}"#
            ),
        )
    };
    assert_eq!(
        count("{urn:lather:echo}echo"),
        Some(2.0),
        "{}",
        metrics.text()
    );
    assert_eq!(count("{urn:m}guarded"), Some(1.0));
}

#[tokio::test]
async fn malformed_and_oversize_batches_are_refused_whole() {
    let server = TestServer::start(&format!(
        "[server]\nlisten = \"127.0.0.1:0\"\nmax_batch_items = 2\n{SERVICE}"
    ))
    .await;
    let three = format!("{}{}{}", echo_item("a"), echo_item("b"), echo_item("c"));
    let answer = batch(&server, &three).await;
    answer.assert_fault(FaultKind::InvalidEnvelope, SoapVersion::V12);
    assert!(
        answer.text().contains("max_batch_items"),
        "{}",
        answer.text()
    );
    for bad in ["", "<x:Other xmlns:x=\"urn:x\"/>"] {
        batch(&server, bad)
            .await
            .assert_fault(FaultKind::InvalidEnvelope, SoapVersion::V12);
    }
    // An item with two operations is that item's fault; the other item stands.
    let two_ops = format!(
        "<lb:Item><a:x xmlns:a=\"urn:a\"/><a:y xmlns:a=\"urn:a\"/></lb:Item>{}",
        echo_item("ok")
    );
    let answer = batch(&server, &two_ops).await;
    assert_eq!(answer.status, 200);
    assert!(
        answer.text().contains("one operation element"),
        "{}",
        answer.text()
    );
    assert!(
        answer.text().contains("<text>ok</text>"),
        "{}",
        answer.text()
    );
}

#[tokio::test]
async fn the_client_batch_call_gives_each_answer_in_order() {
    let server = TestServer::start(SERVICE).await;
    let url = server.url("/echo");
    let call = |payload: &str| Call::new(Bytes::from(payload.to_owned())).version(SoapVersion::V12);
    let calls = [
        call(r#"<ns:echo xmlns:ns="urn:lather:echo"><text>one</text></ns:echo>"#),
        call(r#"<m:guarded xmlns:m="urn:m"/>"#),
        call(r#"<ns:echo xmlns:ns="urn:lather:echo"><text>three</text></ns:echo>"#),
    ];
    let results = Client::new().batch(&url, &calls).await.unwrap();
    assert_eq!(results.len(), 3);
    let body = |i: usize| {
        let response = results[i].as_ref().unwrap();
        String::from_utf8(response.envelope().unwrap().body().to_vec()).unwrap()
    };
    assert!(body(0).contains("one"));
    let err = results[1].as_ref().unwrap_err();
    assert!(err.is_fault(), "{err}");
    assert_eq!(err.status(), Some(400));
    assert!(body(2).contains("three"));
    assert!(Client::new().batch(&url, &[]).await.is_err());
}
