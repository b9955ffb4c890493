//! SubscriptionEnd for the source's own decisions (SourceCancelling, SourceShuttingDown),
//! sent over real HTTP to a sink on 127.0.0.1, and the store read back on reopening.

use crate::support::http_sink;
use bytes::Bytes;
use lather_envelope::{Envelope, Limits, SoapVersion};
use lather_eventing::{EventSource, SourceSettings};
use lather_test_util::ScratchDir;
use std::net::SocketAddr;
use std::time::Duration;
use tokio::sync::mpsc;

const WSE04: &str = "http://schemas.xmlsoap.org/ws/2004/08/eventing";
const WSE11: &str = "http://www.w3.org/2011/03/ws-evt";
const WSA10: &str = "http://www.w3.org/2005/08/addressing";

fn subscribe(wse: &str, notify: SocketAddr, end_to: SocketAddr) -> Envelope {
    let text = format!(
        r#"<s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope"><s:Header><wsa:Action xmlns:wsa="{WSA10}">{wse}/Subscribe</wsa:Action></s:Header><s:Body><wse:Subscribe xmlns:wse="{wse}" xmlns:wsa="{WSA10}"><wse:EndTo><wsa:Address>http://{end_to}/end</wsa:Address><wsa:ReferenceParameters><e:Who xmlns:e="urn:e">me</e:Who></wsa:ReferenceParameters></wse:EndTo><wse:Delivery><wse:NotifyTo><wsa:Address>http://{notify}/n</wsa:Address></wse:NotifyTo></wse:Delivery></wse:Subscribe></s:Body></s:Envelope>"#
    );
    Envelope::parse(Bytes::from(text), &Limits::default()).unwrap()
}

async fn next(rx: &mut mpsc::UnboundedReceiver<String>) -> String {
    tokio::time::timeout(Duration::from_secs(5), rx.recv())
        .await
        .expect("in time")
        .expect("open")
}

#[tokio::test]
async fn cancelling_and_shutting_down_send_subscription_end_with_their_status() {
    let source = EventSource::open(SourceSettings::allowing_loopback()).unwrap();
    let (notify, _n) = http_sink().await;
    let (end_to, mut ends) = http_sink().await;
    source
        .handle(&subscribe(WSE04, notify, end_to), "http://h/events")
        .await
        .unwrap();
    let id = source.subscriptions()[0].id.clone();
    assert!(source.cancel(&id, "maintenance").await);
    let end = next(&mut ends).await;
    assert!(
        end.contains(&format!(
            "<wse:Status>{WSE04}/SourceCancelling</wse:Status>"
        )),
        "{end}"
    );
    assert!(
        end.contains(r#"<wse:Reason xml:lang="en">maintenance</wse:Reason>"#),
        "{end}"
    );
    assert!(
        end.contains("lwsa:IsReferenceParameter=\"true\"") && end.contains(">me</e:Who>"),
        "EndTo's parameter echoed: {end}"
    );
    assert!(source.subscriptions().is_empty());
    assert!(!source.cancel(&id, "again").await);

    for wse in [WSE04, WSE11] {
        source
            .handle(&subscribe(wse, notify, end_to), "http://h/events")
            .await
            .unwrap();
    }
    source.shut_down("going away").await;
    let mut statuses: Vec<String> = Vec::new();
    for _ in 0..2 {
        let end = next(&mut ends).await;
        let env = Envelope::parse(Bytes::from(end.clone()), &Limits::default()).unwrap();
        assert_eq!(env.version(), SoapVersion::V12);
        let start = end.find("<wse:Status>").unwrap() + 12;
        statuses.push(end[start..start + end[start..].find('<').unwrap()].to_owned());
    }
    statuses.sort();
    assert_eq!(
        statuses,
        [
            format!("{WSE04}/SourceShuttingDown"),
            format!("{WSE11}/SourceShuttingDown")
        ]
    );
    assert!(source.subscriptions().is_empty());
}

#[tokio::test]
async fn a_reopened_store_holds_the_subscriptions_and_drops_ended_ones() {
    let dir = ScratchDir::new("eventing-store");
    let path = dir.join("subs.redb");
    let settings = SourceSettings {
        store: Some(path.clone()),
        ..SourceSettings::allowing_loopback()
    };
    let (notify, _n) = http_sink().await;
    let (end_to, _e) = http_sink().await;
    let kept = {
        let source = EventSource::open(settings.clone()).unwrap();
        for wse in [WSE04, WSE11, WSE04] {
            source
                .handle(&subscribe(wse, notify, end_to), "http://h/events")
                .await
                .unwrap();
        }
        let mut subs = source.subscriptions();
        let cancelled = subs.pop().unwrap();
        source.cancel(&cancelled.id, "gone").await;
        subs.sort_by(|a, b| a.id.cmp(&b.id));
        subs
    };
    // Tasks of the first source let go of the file shortly after it is dropped.
    let mut reopened = None;
    for _ in 0..50 {
        match EventSource::open(settings.clone()) {
            Ok(source) => {
                reopened = Some(source);
                break;
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
    let source = reopened.expect("the store reopens");
    let mut again = source.subscriptions();
    again.sort_by(|a, b| a.id.cmp(&b.id));
    assert_eq!(again, kept);
    drop(source);
}
