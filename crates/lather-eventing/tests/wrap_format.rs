//! The WS-Eventing 2011 Wrap delivery format on real loopback sockets: over HTTP and
//! soap.tcp each event arrives inside `wse:Notify` with `@actionURI` = the event's action,
//! under the action `…/WrappedSinkPortType/NotifyEvent`, with the reference parameters
//! echoed; lather.bin carries the raw event; Unwrap stays the default; an unknown format is
//! still refused, naming the supported ones.

use crate::support;

use lather_envelope::{Element, FaultKind, Limits, QName};
use lather_eventing::binding::binary;
use lather_eventing::client::{Sink, SinkMessage};
use lather_eventing::{Binding, EventSource, NOTIFY_EVENT_ACTION, SourceSettings, WRAP_FORMAT};
use std::time::Duration;
use support::*;

fn format(name: &str) -> String {
    format!(r#"<wse:Format Name="{name}"/>"#)
}

async fn next_notification(sink: &mut Sink) -> lather_eventing::client::Notification {
    let got = tokio::time::timeout(Duration::from_secs(5), sink.next())
        .await
        .expect("in time")
        .unwrap();
    match got {
        SinkMessage::Notification(n) => n,
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn wrapped_notifications_over_http_and_soap_tcp() {
    assert_eq!(
        NOTIFY_EVENT_ACTION,
        "http://www.w3.org/2011/03/ws-evt/WrappedSinkPortType/NotifyEvent"
    );
    for binding in [Binding::Http, Binding::SoapTcp] {
        let source = EventSource::open(SourceSettings::allowing_loopback()).unwrap();
        let mut sink = Sink::bind_in("127.0.0.1:0".parse().unwrap(), binding)
            .await
            .unwrap();
        source
            .handle(
                &subscribe(WSE11, &sink.notify_url(), None, "", &format(WRAP_FORMAT)),
                "http://h/e",
            )
            .await
            .unwrap();
        assert!(source.subscriptions()[0].wrapped);
        let mut event = event(3, 10);
        event.action = Some("urn:q:Quote?a=1&b=\"2\"".into());
        assert_eq!(source.publish_event(event), 1);
        let note = next_notification(&mut sink).await;
        // It came inside wse:Notify (the client's sink says so and unwraps it): the
        // wrapper's actionURI is the event's action, the event is the one published.
        assert!(note.wrapped, "{binding:?}: {note:?}");
        assert_eq!(
            note.action.as_deref(),
            Some("urn:q:Quote?a=1&b=\"2\""),
            "{binding:?}"
        );
        let quote = Element::parse(note.body.as_bytes(), &Limits::default()).unwrap();
        assert_eq!(quote.name().local(), "Quote", "{}", note.body);
        assert_eq!(quote.attribute(&QName::new("", "n")), Some("3"));
        assert!(
            note.reference_parameters
                .iter()
                .any(|p| p.contains("<k:Key") && p.contains(">42</k:Key>")),
            "{:?}",
            note.reference_parameters
        );
    }
}

#[tokio::test]
async fn lather_bin_carries_the_raw_event_of_a_wrapped_subscription() {
    let source = EventSource::open(SourceSettings::allowing_loopback()).unwrap();
    let (addr, mut rx) = raw_sink().await;
    source
        .handle(
            &subscribe(
                WSE11,
                &format!("lather.bin://{addr}"),
                None,
                "",
                &format(WRAP_FORMAT),
            ),
            "http://h/e",
        )
        .await
        .unwrap();
    assert_eq!(source.publish_event(event(4, 10)), 1);
    let frame = frames(&mut rx, 1, |b| binary::decode(b).unwrap())
        .await
        .remove(0);
    assert_eq!(frame.action, "urn:q:Quote");
    assert!(frame.payload == payload(4, 10));
}

#[tokio::test]
async fn unwrap_stays_the_default_and_an_unknown_format_is_refused() {
    let source = EventSource::open(SourceSettings::allowing_loopback()).unwrap();
    let mut sink = Sink::bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
    for extra in [
        String::new(),
        format("http://www.w3.org/2011/03/ws-evt/DeliveryFormats/Unwrap"),
    ] {
        source
            .handle(
                &subscribe(WSE11, &sink.notify_url(), None, "", &extra),
                "http://h/e",
            )
            .await
            .unwrap();
    }
    assert_eq!(source.publish_event(event(5, 10)), 2);
    for _ in 0..2 {
        let note = next_notification(&mut sink).await;
        assert_eq!(note.action.as_deref(), Some("urn:q:Quote"));
        assert!(is_event(note.body.as_bytes(), 5, 10), "{}", note.body);
    }
    let fault = source
        .handle(
            &subscribe(
                WSE11,
                &sink.notify_url(),
                None,
                "",
                &format("urn:other:format"),
            ),
            "http://h/e",
        )
        .await
        .unwrap_err();
    assert_eq!(fault.kind(), FaultKind::DeliveryFormatRequestedUnavailable);
    assert!(fault.reason().contains("urn:other:format"), "{fault}");
    let detail = fault.extra_detail().unwrap_or_default();
    assert!(
        detail.contains(&format!("{WRAP_FORMAT}</wse:SupportedDeliveryFormat>")),
        "{detail}"
    );
    assert_eq!(source.subscriptions().len(), 2);
}
