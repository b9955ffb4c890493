//! `lather_eventing::client` and its `Sink` against lather's own event source over real
//! HTTP: every operation in the three version pairs, reference parameters both ways, topic
//! filters, SubscriptionEnd, faults and an unreachable source as clear errors.

use crate::support;

use lather_envelope::SoapVersion;
use lather_eventing::client::{
    EventingClient, EventingClientError, Filter, Sink, SinkMessage, SubscribeOptions,
};
use lather_eventing::{Endpoint, Version};
use std::time::Duration;
use support::{TestServer, closed_port, envelope, post};

const EVENT: &str = r#"<ev:Temperature xmlns:ev="urn:ev"><c>21.5</c></ev:Temperature>"#;
const OTHER: &str = r#"<ev:Pressure xmlns:ev="urn:ev"><hpa>1013</hpa></ev:Pressure>"#;

async fn source() -> TestServer {
    TestServer::start(
        "[[service]]\nname = \"events\"\npath = \"/events\"\nbuiltin = \"event-source\"\nnotify_allow = [\"127.0.0.1\"]\nmax_expires_s = 900\n",
    )
    .await
}

/// Publishes `event`; returns the answer's text (with the queued count).
async fn publish(server: &TestServer, event: &str) -> String {
    let answer = post(
        server.addr,
        "/events/publish",
        SoapVersion::V12,
        envelope(SoapVersion::V12, "", event),
    )
    .await;
    assert_eq!(answer.status, 200, "{}", answer.text());
    answer.text().to_owned()
}

async fn next(sink: &mut Sink) -> SinkMessage {
    tokio::time::timeout(Duration::from_secs(10), sink.next())
        .await
        .expect("a message in time")
        .expect("the sink is open")
}

#[tokio::test]
async fn every_operation_in_each_version_with_reference_parameters_both_ways() {
    let server = source().await;
    let cases = [
        (
            Version::Submission04Wsa10,
            SoapVersion::V12,
            "urn:lather:eventing",
        ),
        (Version::Rec2011, SoapVersion::V12, "urn:lather:eventing"),
        (
            Version::Submission04Wsa04,
            SoapVersion::V11,
            "http://schemas.xmlsoap.org/ws/2004/08/eventing",
        ),
    ];
    for (version, soap, id_ns) in cases {
        let mut sink = Sink::bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
        let client = EventingClient::default();
        let mut options = SubscribeOptions::new(version, sink.notify_url());
        options.soap = soap;
        options.notify_to.params = vec![r#"<app:Key xmlns:app="urn:app">k-1</app:Key>"#.into()];
        options.end_to = Some(Endpoint {
            address: sink.end_url(),
            params: Vec::new(),
        });
        options.expires = Some("PT5M".into());
        options.filter = Some(Filter::topics(["{urn:ev}Temperature"]));
        let mut sub = client
            .subscribe(&server.url("/events"), &options)
            .await
            .unwrap_or_else(|e| panic!("{version:?}: {e}"));
        assert_eq!(sub.manager.address, server.url("/events"));
        assert_eq!(sub.expires.as_deref(), Some("PT300S"), "{version:?}");
        assert_eq!(sub.manager.params.len(), 1, "{sub:?}");
        assert!(
            sub.manager.params[0].contains(&format!(r#"xmlns:i="{id_ns}""#)),
            "{version:?}: {sub:?}"
        );

        let status = client.get_status(&sub).await.unwrap();
        let left: f64 = status
            .as_deref()
            .and_then(|s| s.strip_prefix("PT")?.strip_suffix('S')?.parse().ok())
            .unwrap_or_else(|| panic!("{status:?}"));
        assert!((290.0..=300.0).contains(&left), "{status:?}");
        let granted = client.renew(&mut sub, Some("PT2M")).await.unwrap();
        assert_eq!(granted.as_deref(), Some("PT120S"));
        assert_eq!(sub.expires.as_deref(), Some("PT120S"));

        assert!(publish(&server, OTHER).await.contains(r#"queued="0""#));
        assert!(publish(&server, EVENT).await.contains(r#"queued="1""#));
        let SinkMessage::Notification(n) = next(&mut sink).await else {
            panic!("not a notification")
        };
        assert!(n.body.contains("<c>21.5</c>"), "{n:?}");
        assert_eq!(n.reference_parameters.len(), 1, "{n:?}");
        assert!(
            n.reference_parameters[0].contains(">k-1</app:Key>"),
            "{n:?}"
        );

        client.unsubscribe(&sub).await.unwrap();
        assert!(publish(&server, EVENT).await.contains(r#"queued="0""#));
        // The manager no longer knows it: the fault comes back as a clear error.
        let err = client.get_status(&sub).await.unwrap_err();
        let EventingClientError::Fault { subcode, .. } = &err else {
            panic!("{err:?}")
        };
        let expected = if version.is_2004() {
            "InvalidMessage"
        } else {
            "UnknownSubscription"
        };
        assert!(
            subcode.as_deref().unwrap_or("").ends_with(expected)
                || err.to_string().contains(expected),
            "{version:?}: {err}"
        );
    }
}

#[tokio::test]
async fn wrap_and_gzip_are_asked_for_and_the_sink_hands_the_event_out_unwrapped() {
    let server = TestServer::start(
        "[[service]]\nname = \"events\"\npath = \"/events\"\nbuiltin = \"event-source\"\nnotify_allow = [\"127.0.0.1\"]\ncompress_min_bytes = 1\n",
    )
    .await;
    let client = EventingClient::default();
    // On the wire, at a plain HTTP sink: gzip, and the event inside wse:Notify.
    let (raw_addr, mut raw) = support::sink::sink(Duration::ZERO).await;
    let mut options = SubscribeOptions::new(Version::Rec2011, format!("http://{raw_addr}/n"));
    options.wrap = true;
    options.gzip = true;
    let on_wire = client
        .subscribe(&server.url("/events"), &options)
        .await
        .unwrap();
    assert!(publish(&server, EVENT).await.contains(r#"queued="1""#));
    let got = tokio::time::timeout(Duration::from_secs(10), raw.recv())
        .await
        .expect("a notification in time")
        .expect("the sink is open");
    assert_eq!(got.content_encoding.as_deref(), Some("gzip"));
    let mut text = String::new();
    std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(&got.raw[..]), &mut text)
        .unwrap();
    assert!(
        text.contains(lather_eventing::NOTIFY_EVENT_ACTION),
        "{text}"
    );
    // The event's own action (what the publish request named) is the wrapper's actionURI.
    let event_action = text
        .split(r#"actionURI=""#)
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap_or_else(|| panic!("no actionURI: {text}"))
        .to_owned();
    assert!(!event_action.is_empty() && event_action != lather_eventing::NOTIFY_EVENT_ACTION);
    client.unsubscribe(&on_wire).await.unwrap();
    // At the client's own sink: inflated, unwrapped, with the event's own action.
    let mut sink = Sink::bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let mut options = SubscribeOptions::new(Version::Rec2011, sink.notify_url());
    options.wrap = true;
    options.gzip = true;
    let sub = client
        .subscribe(&server.url("/events"), &options)
        .await
        .unwrap();
    assert!(publish(&server, EVENT).await.contains(r#"queued="1""#));
    let SinkMessage::Notification(n) = next(&mut sink).await else {
        panic!("not a notification")
    };
    assert_eq!(n.action.as_deref(), Some(event_action.as_str()));
    assert!(n.body.starts_with("<ev:Temperature"), "{n:?}");
    assert!(n.body.contains("<c>21.5</c>"), "{n:?}");
    client.unsubscribe(&sub).await.unwrap();
}

#[tokio::test]
async fn the_sink_hands_out_a_subscription_end() {
    let mut sink = Sink::bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let wse = "http://schemas.xmlsoap.org/ws/2004/08/eventing";
    let body = format!(
        r#"<wse:SubscriptionEnd xmlns:wse="{wse}"><wse:Status>{wse}/SourceShuttingDown</wse:Status><wse:Reason xml:lang="en">going away</wse:Reason></wse:SubscriptionEnd>"#
    );
    let header = format!(
        r#"<wsa:Action xmlns:wsa="http://www.w3.org/2005/08/addressing">{wse}/SubscriptionEnd</wsa:Action>"#
    );
    let answer = post(
        sink.local_addr(),
        "/end",
        SoapVersion::V12,
        envelope(SoapVersion::V12, &header, &body),
    )
    .await;
    assert_eq!(answer.status, 202, "{}", answer.text());
    let SinkMessage::End(end) = next(&mut sink).await else {
        panic!("not a SubscriptionEnd")
    };
    assert_eq!(end.status, format!("{wse}/SourceShuttingDown"));
    assert_eq!(end.reason, "going away");
    // Not an envelope: refused, nothing handed out.
    let answer = post(sink.local_addr(), "/notify", SoapVersion::V12, "<x/>").await;
    assert_eq!(answer.status, 400, "{}", answer.text());
}

/// A SubscriptionEnd as Apache CXF 4.1.5 sends it (`SubscriptionEndNotificationTask`): the
/// 2011 action, but a Body element JAX-WS named after the Java method of CXF's
/// `EndToEndpoint`. Body captured verbatim from the CXF peer (`interop/cxf`, `source` mode,
/// `end` command) at lather's sink.
const CXF_SUBSCRIPTION_END_BODY: &str = r#"<ns3:subscriptionEnd xmlns="http://www.w3.org/2011/03/ws-evt" xmlns:ns2="http://www.w3.org/2005/08/addressing" xmlns:ns3="http://client.eventing.ws.cxf.apache.org/"><Status>http://www.w3.org/2011/03/ws-evt/SourceShuttingDown</Status><Reason xml:lang="en-US">the CXF peer is shutting down</Reason></ns3:subscriptionEnd>"#;

#[tokio::test]
async fn the_sink_knows_a_subscription_end_by_its_action() {
    let mut sink = Sink::bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let header = r#"<Action xmlns="http://www.w3.org/2005/08/addressing">http://www.w3.org/2011/03/ws-evt/SubscriptionEnd</Action>"#;
    let answer = post(
        sink.local_addr(),
        "/end",
        SoapVersion::V11,
        envelope(SoapVersion::V11, header, CXF_SUBSCRIPTION_END_BODY),
    )
    .await;
    assert_eq!(answer.status, 202, "{}", answer.text());
    let message = next(&mut sink).await;
    let SinkMessage::End(end) = message else {
        panic!("not a SubscriptionEnd: {message:?}")
    };
    assert_eq!(
        end.status,
        "http://www.w3.org/2011/03/ws-evt/SourceShuttingDown"
    );
    assert_eq!(end.reason, "the CXF peer is shutting down");
    // The same Body under a notification's action stays a notification.
    let header =
        r#"<Action xmlns="http://www.w3.org/2005/08/addressing">urn:ev/Temperature</Action>"#;
    post(
        sink.local_addr(),
        "/notify",
        SoapVersion::V11,
        envelope(SoapVersion::V11, header, CXF_SUBSCRIPTION_END_BODY),
    )
    .await;
    assert!(matches!(
        next(&mut sink).await,
        SinkMessage::Notification(_)
    ));
}

#[tokio::test]
async fn faults_and_an_unreachable_source_are_errors_that_name_the_problem() {
    let server = source().await;
    let client = EventingClient::new(Duration::from_secs(5));
    let mut options = SubscribeOptions::new(Version::Submission04Wsa10, "http://127.0.0.1:9/n");
    options.expires = Some("tomorrow".into());
    let err = client
        .subscribe(&server.url("/events"), &options)
        .await
        .unwrap_err();
    let EventingClientError::Fault {
        status,
        code,
        subcode,
        reason,
    } = &err
    else {
        panic!("{err:?}")
    };
    assert_eq!(*status, 400);
    assert!(code.ends_with("Sender"), "{err}");
    assert!(
        subcode
            .as_deref()
            .is_some_and(|s| s.ends_with("InvalidExpirationTime")),
        "{err}"
    );
    assert!(reason.contains("tomorrow"), "{err}");
    assert!(err.to_string().contains("InvalidExpirationTime"), "{err}");

    let mut options = SubscribeOptions::new(Version::Rec2011, "http://127.0.0.1:9/n");
    options.filter = Some(Filter {
        dialect: "urn:no-such-dialect".into(),
        text: "x".into(),
        namespaces: Vec::new(),
    });
    let err = client
        .subscribe(&server.url("/events"), &options)
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("FilteringRequestedUnavailable"),
        "{err}"
    );

    let dead = closed_port().await;
    let url = format!("http://{dead}/events");
    let err = client.subscribe(&url, &options).await.unwrap_err();
    assert!(
        matches!(err, EventingClientError::Unreachable { .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains(&url), "{err}");

    let err = client
        .subscribe("https://example.org/events", &options)
        .await
        .unwrap_err();
    assert!(matches!(err, EventingClientError::BadUrl { .. }), "{err:?}");
}
