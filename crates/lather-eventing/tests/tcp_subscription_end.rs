//! SubscriptionEnd over the TCP bindings, on real loopback sockets: at shutdown on the
//! subscription's own stream, after every notification and before the stream closes; after
//! a delivery failure on a new connection to EndTo; a cancel to an EndTo elsewhere; and
//! Subscribe taking `soap.tcp://` and `lather.bin://` EndTo addresses.

use crate::support;

use lather_envelope::{FaultKind, QName};
use lather_eventing::binding::binary::{self, BinaryMessage, EndFrame};
use lather_eventing::binding::tcp::decode_soap_frame;
use lather_eventing::client::{Sink, SinkMessage};
use lather_eventing::{Binding, EventSource, SourceSettings};
use std::time::Duration;
use support::*;

/// The messages of one soap.tcp connection's bytes: (action, body) per envelope.
fn soap_messages(mut bytes: &[u8]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    while let Some((env, used)) = decode_soap_frame(bytes).unwrap() {
        let env = envelope(&env);
        let action = env
            .header(&QName::new(WSA10, "Action"))
            .and_then(|b| env.header_text(b))
            .unwrap();
        let body = String::from_utf8(env.extract_payload().unwrap().to_vec()).unwrap();
        out.push((action, body));
        bytes = &bytes[used..];
    }
    assert!(bytes.is_empty(), "no partial frame left");
    out
}

/// The frames of one lather.bin connection's bytes.
fn binary_messages(mut bytes: &[u8]) -> Vec<BinaryMessage> {
    let mut out = Vec::new();
    while let Some((m, used)) = binary::decode_message(bytes).unwrap() {
        out.push(m);
        bytes = &bytes[used..];
    }
    assert!(bytes.is_empty(), "no partial frame left");
    out
}

#[tokio::test]
async fn at_shutdown_subscription_end_comes_last_on_the_subscriptions_stream() {
    for scheme in ["soap.tcp", "lather.bin"] {
        let source = EventSource::open(SourceSettings::allowing_loopback()).unwrap();
        let (addr, mut rx) = raw_sink().await;
        let address = format!("{scheme}://{addr}");
        source
            .handle(
                &subscribe(WSE11, &address, Some(&address), "", ""),
                "http://h/e",
            )
            .await
            .unwrap();
        let id = source.subscriptions()[0].id.clone();
        for n in 0..3 {
            assert_eq!(source.publish_event(event(n, 20)), 1);
        }
        source.shut_down("going away").await;
        assert!(source.subscriptions().is_empty());
        // One connection: the three notifications, then SubscriptionEnd, then its close.
        let connections = until_closed(&mut rx, 1).await;
        assert_eq!(connections.len(), 1, "{scheme}: one stream");
        let status = format!("{WSE11}/SourceShuttingDown");
        if scheme == "soap.tcp" {
            let messages = soap_messages(&connections[0]);
            assert_eq!(messages.len(), 4, "{messages:?}");
            for (n, (action, body)) in messages[..3].iter().enumerate() {
                assert_eq!(action, "urn:q:Quote");
                assert!(body.contains(&format!(r#"n="{n}""#)), "{body}");
            }
            let (action, body) = &messages[3];
            assert_eq!(action, &format!("{WSE11}/SubscriptionEnd"));
            assert!(
                body.contains(&format!("<wse:Status>{status}</wse:Status>")),
                "{body}"
            );
            assert!(body.contains(">going away</wse:Reason>"), "{body}");
        } else {
            let messages = binary_messages(&connections[0]);
            assert_eq!(messages.len(), 4, "{messages:?}");
            for (n, m) in messages[..3].iter().enumerate() {
                let BinaryMessage::Notification(frame) = m else {
                    panic!("{m:?}")
                };
                assert!(String::from_utf8_lossy(&frame.payload).contains(&format!(r#"n="{n}""#)));
            }
            assert_eq!(
                messages[3],
                BinaryMessage::End(EndFrame {
                    subscription: id,
                    status,
                    reason: "going away".into(),
                })
            );
        }
    }
}

#[tokio::test]
async fn after_a_delivery_failure_subscription_end_goes_to_end_to_on_a_new_connection() {
    for binding in [Binding::SoapTcp, Binding::Binary] {
        let source = EventSource::open(SourceSettings {
            retry: two_attempts(),
            ..SourceSettings::allowing_loopback()
        })
        .unwrap();
        let scheme = if binding == Binding::SoapTcp {
            "soap.tcp"
        } else {
            "lather.bin"
        };
        let dead = format!("{scheme}://{}", dead_address().await);
        let mut ends = Sink::bind_in("127.0.0.1:0".parse().unwrap(), binding)
            .await
            .unwrap();
        source
            .handle(
                &subscribe(WSE04, &dead, Some(&ends.end_url()), "", ""),
                "http://h/e",
            )
            .await
            .unwrap();
        assert_eq!(source.publish_event(event(0, 1)), 1);
        let message = tokio::time::timeout(Duration::from_secs(10), ends.next())
            .await
            .expect("SubscriptionEnd in time")
            .unwrap();
        let SinkMessage::End(end) = message else {
            panic!("{message:?}")
        };
        assert_eq!(
            end.status,
            format!("{WSE04}/DeliveryFailure"),
            "{binding:?}"
        );
        assert!(
            end.reason.contains("failed") && end.reason.contains(&dead),
            "{end:?}"
        );
        assert!(source.subscriptions().is_empty());
    }
}

#[tokio::test]
async fn a_cancel_goes_to_an_end_to_apart_from_the_notifications() {
    let source = EventSource::open(SourceSettings::allowing_loopback()).unwrap();
    let mut notify = Sink::bind_in("127.0.0.1:0".parse().unwrap(), Binding::Binary)
        .await
        .unwrap();
    let mut ends = Sink::bind_in("127.0.0.1:0".parse().unwrap(), Binding::SoapTcp)
        .await
        .unwrap();
    source
        .handle(
            &subscribe(WSE11, &notify.notify_url(), Some(&ends.end_url()), "", ""),
            "http://h/e",
        )
        .await
        .unwrap();
    assert_eq!(source.publish_event(event(5, 10)), 1);
    let first = tokio::time::timeout(Duration::from_secs(5), notify.next())
        .await
        .unwrap()
        .unwrap();
    let SinkMessage::Notification(n) = first else {
        panic!("{first:?}")
    };
    assert!(is_event(n.body.as_bytes(), 5, 10), "{}", n.body);
    assert!(
        n.reference_parameters
            .contains(&r#"<p:Key xmlns:p="urn:k">42</p:Key>"#.to_owned()),
        "{n:?}"
    );
    let id = source.subscriptions()[0].id.clone();
    assert!(source.cancel(&id, "maintenance").await);
    let end = tokio::time::timeout(Duration::from_secs(5), ends.next())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        end,
        SinkMessage::End(lather_eventing::client::SubscriptionEnded {
            status: format!("{WSE11}/SourceCancelling"),
            reason: "maintenance".into(),
        })
    );
}

#[tokio::test]
async fn end_to_may_name_a_tcp_binding_but_not_another_scheme() {
    let source = EventSource::open(SourceSettings::allowing_loopback()).unwrap();
    for end_to in ["soap.tcp://127.0.0.1:9", "lather.bin://127.0.0.1:9"] {
        source
            .handle(
                &subscribe(WSE11, "http://127.0.0.1:9/n", Some(end_to), "", ""),
                "http://h/e",
            )
            .await
            .unwrap();
    }
    assert_eq!(source.subscriptions().len(), 2);
    for (wse, kind) in [
        (WSE11, FaultKind::UnusableEpr),
        (WSE04, FaultKind::InvalidEventingMessage),
    ] {
        let fault = source
            .handle(
                &subscribe(wse, "http://127.0.0.1:9/n", Some("udp://h:1"), "", ""),
                "http://h/e",
            )
            .await
            .unwrap_err();
        assert_eq!(fault.kind(), kind);
        assert!(fault.reason().contains("EndTo address"), "{fault}");
    }
}
