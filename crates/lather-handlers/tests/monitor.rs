//! `monitor` counts per operation and caps the clients it tracks one by one.

use lather_envelope::{Envelope, EnvelopeBuilder, Limits, SoapVersion};
use lather_handlers::Monitor;
use lather_pipeline::{Context, Handler, Message};

fn message(client: &str) -> Message {
    let bytes = EnvelopeBuilder::new(SoapVersion::V12)
        .body("<m:op xmlns:m=\"urn:m\"/>".into())
        .build();
    let context = Context {
        id: 1,
        service: "s".into(),
        action: None,
        client: Some(client.parse().unwrap()),
        ..Default::default()
    };
    Message::new(Envelope::parse(bytes, &Limits::default()).unwrap(), context)
}

fn value(m: &Monitor, name: &str, client: Option<&str>) -> Option<u64> {
    m.observations()
        .into_iter()
        .find(|o| {
            o.name == name
                && client.is_none_or(|c| o.labels.iter().any(|(k, v)| *k == "client" && v == c))
        })
        .map(|o| o.value)
}

#[tokio::test]
async fn clients_beyond_the_cap_are_counted_together() {
    let m = Monitor::new(2);
    for client in ["10.0.0.1", "10.0.0.2", "10.0.0.1", "10.0.0.3", "10.0.0.4"] {
        m.call(&message(client)).await;
    }
    assert_eq!(value(&m, "monitor_messages", None), Some(5));
    assert_eq!(
        value(&m, "monitor_client_messages", Some("10.0.0.1")),
        Some(2)
    );
    assert_eq!(
        value(&m, "monitor_client_messages", Some("10.0.0.2")),
        Some(1)
    );
    assert_eq!(value(&m, "monitor_client_messages", Some("other")), Some(2));
    assert_eq!(value(&m, "monitor_client_messages", Some("10.0.0.3")), None);
    assert_eq!(
        value(&m, "monitor_clients", None),
        Some(3),
        "two tracked + the 'other' group"
    );
}
