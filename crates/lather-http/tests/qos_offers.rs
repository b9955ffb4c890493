//! WS-QoS offers and the broker over real sockets: a service serves its offers at
//! `GET ?qos` and as `q:GetOffers`; an adaptive offer's price steps up while the CPU
//! reading (driven through the server's gauge) stays above `raise_above` and back down
//! below `lower_below`; a server with `[qos] broker` registers its offers, and pushes a
//! moved price; the broker selects the best offer, says why none fits, and keeps every
//! registration across a restart on its SQLite file.

use crate::support;

use lather_config::Config;
use lather_envelope::{Element, FaultKind, Limits, SoapVersion};
use lather_qos::broker::{BrokerClient, BrokerError, Selection};
use lather_qos::{CpuGauge, Offer, offers_of};
use lather_test_util::ScratchDir;
use std::time::Duration;
use support::*;

const OFFERS: &str = "[[service.offer]]\nname = \"gold\"\nresponse_time_ms = 20\nthroughput = 500\nprice = 10\ncompression = \"none\"\n\
                      [[service.offer]]\nname = \"bronze\"\nresponse_time_ms = 200\nthroughput = 100\nprice = 1\n\
                      [service.offer.adaptive]\nwindow_s = 2\nstep = 0.5\nmax_price = 4\n";

fn quotes(extra: &str) -> String {
    format!(
        "[server]\nlisten = \"127.0.0.1:0\"\n{extra}\
         [[service]]\nname = \"quotes\"\npath = \"/quotes\"\nbuiltin = \"echo\"\n{OFFERS}"
    )
}

async fn start(text: &str, gauge: std::sync::Arc<CpuGauge>) -> TestServer {
    TestServer::start_with_gauge(&Config::from_toml(text, "offers.toml").unwrap(), gauge).await
}

fn offers_in(xml: &[u8]) -> Vec<Offer> {
    let element = Element::parse(xml, &Limits::default()).unwrap();
    offers_of(&element).unwrap()
}

async fn served_offers(server: &TestServer) -> Vec<Offer> {
    let answer = get(server.addr, "/quotes?qos").await;
    assert_eq!(answer.status, 200, "{}", answer.text());
    assert!(
        answer.headers["content-type"]
            .to_str()
            .unwrap()
            .starts_with("application/xml")
    );
    offers_in(&answer.body)
}

fn price(offers: &[Offer], name: &str) -> f64 {
    offers.iter().find(|o| o.name == name).unwrap().price
}

/// Polls `probe` every 100 ms until it returns `Some`, for at most `secs`.
async fn eventually<T, F: std::future::Future<Output = Option<T>>>(
    secs: u64,
    what: &str,
    mut probe: impl FnMut() -> F,
) -> T {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(v) = probe().await {
            return v;
        }
        assert!(tokio::time::Instant::now() < deadline, "never: {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn a_service_serves_its_offers_by_get_and_by_soap() {
    let s = start(&quotes(""), CpuGauge::manual(0)).await;
    let offers = served_offers(&s).await;
    assert_eq!(offers.len(), 2);
    let gold = &offers[0];
    assert_eq!(
        (
            gold.name.as_str(),
            gold.service.as_str(),
            gold.response_time_ms
        ),
        ("gold", "quotes", 20)
    );
    assert_eq!(gold.endpoint, format!("http://{}/quotes", s.addr));
    assert_eq!(
        gold.compression,
        Some(lather_config::CompressionPreference::None)
    );
    assert_eq!(offers[1].adapts_to.as_deref(), Some("cpu"));
    // The same as a SOAP operation, whatever operations the service itself has.
    let body = envelope(
        SoapVersion::V12,
        "",
        r#"<q:GetOffers xmlns:q="urn:lather:qos"/>"#,
    );
    let answer = send(
        s.addr,
        soap_request(s.addr, "/quotes", SoapVersion::V12, body),
    )
    .await;
    assert_eq!(answer.status, 200, "{}", answer.text());
    let payload = answer.envelope().extract_payload().unwrap();
    let response = Element::parse(&payload, &Limits::default()).unwrap();
    assert_eq!(response.name().local(), "GetOffersResponse");
    let inner = response.elements().next().unwrap();
    assert_eq!(offers_of(inner).unwrap(), offers);
    // A service without offers answers an empty document.
    let plain = TestServer::echo().await;
    let empty = get(plain.addr, "/echo?qos").await;
    assert_eq!(empty.status, 200);
    assert!(offers_in(&empty.body).is_empty());
}

#[tokio::test]
async fn an_adaptive_price_steps_up_above_the_threshold_and_back_down_below() {
    let gauge = CpuGauge::manual(95);
    let s = start(&quotes(""), gauge.clone()).await;
    // Two 1-second samples at 95% make a window: +0.5 a window, from 1 towards the cap.
    eventually(10, "the price rises", || async {
        (price(&served_offers(&s).await, "bronze") >= 2.0).then_some(())
    })
    .await;
    // Inside the band (70–80) the price holds, below its cap: once the window holds only
    // samples at 75, nothing moves.
    gauge.set(75);
    tokio::time::sleep(Duration::from_millis(2200)).await;
    let held = price(&served_offers(&s).await, "bronze");
    assert!((2.0..4.0).contains(&held), "{held}");
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert_eq!(price(&served_offers(&s).await, "bronze"), held);
    let text = get(s.addr, "/metrics").await.text().to_owned();
    assert_eq!(
        metric(
            &text,
            r#"lather_qos_offer_price{service="quotes",offer="bronze"}"#
        ),
        Some(held),
        "{text}"
    );
    // Above the band again it climbs to the cap and stops there.
    gauge.set(95);
    eventually(10, "the price reaches its cap", || async {
        (price(&served_offers(&s).await, "bronze") == 4.0).then_some(())
    })
    .await;
    // The fixed offer keeps its price.
    assert_eq!(price(&served_offers(&s).await, "gold"), 10.0);
    // Below 70 it falls back to the offer's own.
    gauge.set(10);
    eventually(15, "the price falls back to 1", || async {
        (price(&served_offers(&s).await, "bronze") == 1.0).then_some(())
    })
    .await;
}

fn broker_config(store: &std::path::Path) -> String {
    format!(
        "[server]\nlisten = \"127.0.0.1:0\"\n\
         [[service]]\nname = \"broker\"\npath = \"/qos\"\nbuiltin = \"qos-broker\"\nstore = \"{}\"\n",
        store.display()
    )
}

#[tokio::test]
async fn the_broker_selects_follows_moved_prices_and_keeps_offers_across_a_restart() {
    let dir = ScratchDir::new("qos-broker");
    let store = dir.join("offers.sqlite");
    let mut broker = TestServer::start(&broker_config(&store)).await;
    let url = broker.url("/qos");
    let gauge = CpuGauge::manual(0);
    let service = start(
        &quotes(&format!(
            "[qos]\nbroker = \"{url}\"\nbroker_refresh_s = 60\n"
        )),
        gauge.clone(),
    )
    .await;
    let client = BrokerClient::new(url.clone(), Duration::from_secs(5)).unwrap();
    let listed = eventually(10, "the service registers its offers", || async {
        let offers = client.list(Some("quotes")).await.unwrap();
        (offers.len() == 2).then_some(offers)
    })
    .await;
    assert!(
        listed
            .iter()
            .all(|o| o.endpoint == format!("http://{}/quotes", service.addr))
    );
    // The cheapest offer that fits wins.
    let mut want = Selection {
        service: "quotes".into(),
        ..Selection::default()
    };
    assert_eq!(client.select(&want).await.unwrap().name, "bronze");
    want.max_response_time_ms = Some(50);
    let gold = client.select(&want).await.unwrap();
    assert_eq!((gold.name.as_str(), gold.price), ("gold", 10.0));
    // None fits: a NoOfferFits fault saying what each candidate lacked.
    want.max_price = Some(5.0);
    match client.select(&want).await {
        Err(BrokerError::Client(e)) => {
            let text = e.to_string();
            assert!(e.is_fault(), "{text}");
            assert!(
                text.contains("1 slower than asked, 1 dearer than asked"),
                "{text}"
            );
        }
        other => panic!("expected NoOfferFits, got {other:?}"),
    }
    let body = envelope(
        SoapVersion::V12,
        "",
        r#"<q:SelectOffer xmlns:q="urn:lather:qos"><q:Service>quotes</q:Service><q:MaxPrice>0.5</q:MaxPrice></q:SelectOffer>"#,
    );
    let answer = send(
        broker.addr,
        soap_request(broker.addr, "/qos", SoapVersion::V12, body),
    )
    .await;
    answer.assert_fault(FaultKind::NoOfferFits, SoapVersion::V12);
    // A moved adaptive price reaches the broker without waiting for the refresh.
    gauge.set(95);
    eventually(10, "the broker sees bronze at 1.5 or more", || async {
        let offers = client.list(Some("quotes")).await.unwrap();
        (price(&offers, "bronze") >= 1.5).then_some(())
    })
    .await;
    // The broker restarts on its file (on another port, out of the service's reach):
    // every registration is still there.
    broker.shutdown().await.unwrap().unwrap();
    drop(broker);
    let broker = TestServer::start(&broker_config(&store)).await;
    let client = BrokerClient::new(broker.url("/qos"), Duration::from_secs(5)).unwrap();
    let kept = client.list(None).await.unwrap();
    assert_eq!(kept.len(), 2, "{kept:?}");
    assert!(price(&kept, "bronze") >= 1.5);
    assert!(
        kept.iter()
            .all(|o| o.endpoint == format!("http://{}/quotes", service.addr))
    );
}

#[tokio::test]
async fn bad_registrations_and_requests_are_faults() {
    let broker = TestServer::start(
        "[[service]]\nname = \"broker\"\npath = \"/qos\"\nbuiltin = \"qos-broker\"\nmax_registrations = 1\n",
    )
    .await;
    let call = |payload: String| {
        let body = envelope(SoapVersion::V12, "", &payload);
        send(
            broker.addr,
            soap_request(broker.addr, "/qos", SoapVersion::V12, body),
        )
    };
    let offer = |endpoint: &str, name: &str| {
        let mut s = String::new();
        Offer {
            service: "s".into(),
            endpoint: endpoint.into(),
            name: name.into(),
            response_time_ms: 1,
            throughput: 1.0,
            price: 1.0,
            compression: None,
            class: None,
            adapts_to: None,
        }
        .write_xml(&mut s);
        s
    };
    let register = |offers: String| {
        format!(r#"<q:RegisterOffers xmlns:q="urn:lather:qos">{offers}</q:RegisterOffers>"#)
    };
    call(register(offer("ftp://x/s", "a")))
        .await
        .assert_fault(FaultKind::InvalidOffer, SoapVersion::V12);
    call(register(String::new()))
        .await
        .assert_fault(FaultKind::InvalidOffer, SoapVersion::V12);
    let two = format!("{}{}", offer("http://x/s", "a"), offer("http://x/s", "b"));
    call(register(two))
        .await
        .assert_fault(FaultKind::OfferStoreUnavailable, SoapVersion::V12);
    let same = format!("{}{}", offer("http://x/s", "a"), offer("http://x/s", "a"));
    let twice = call(register(same)).await;
    twice.assert_fault(FaultKind::InvalidOffer, SoapVersion::V12);
    assert!(
        twice.text().contains("two offers named"),
        "{}",
        twice.text()
    );
    call(
        r#"<q:SelectOffer xmlns:q="urn:lather:qos"><q:MaxPrice>cheap</q:MaxPrice></q:SelectOffer>"#
            .into(),
    )
    .await
    .assert_fault(FaultKind::InvalidQosRequirements, SoapVersion::V12);
    call(r#"<q:Buy xmlns:q="urn:lather:qos"/>"#.into())
        .await
        .assert_fault(FaultKind::UnknownOperation, SoapVersion::V12);
}

#[tokio::test]
async fn offers_travel_to_the_broker_over_nats_and_leave_with_the_server() {
    let nats = lather_test_util::nats::NatsServer::start("qos-offers");
    let table = format!(
        "[nats]\nurl = \"{}\"\nconnect_timeout_ms = 1000\nsubject_prefix = \"qostest\"\n",
        nats.url()
    );
    let broker = TestServer::start(&format!(
        "[server]\nlisten = \"127.0.0.1:0\"\n{table}\
         [[service]]\nname = \"broker\"\npath = \"/qos\"\nbuiltin = \"qos-broker\"\n"
    ))
    .await;
    let gauge = CpuGauge::manual(0);
    let mut service = start(
        &quotes(&format!("{table}[qos]\nbroker = \"nats\"\n")),
        gauge.clone(),
    )
    .await;
    let client = BrokerClient::new(broker.url("/qos"), Duration::from_secs(5)).unwrap();
    eventually(10, "the offers arrive over NATS", || async {
        (client.list(Some("quotes")).await.unwrap().len() == 2).then_some(())
    })
    .await;
    // A moved price is published at once.
    gauge.set(95);
    eventually(10, "the moved price arrives over NATS", || async {
        let offers = client.list(Some("quotes")).await.unwrap();
        (price(&offers, "bronze") >= 1.5).then_some(())
    })
    .await;
    // A graceful stop removes them.
    service.shutdown().await.unwrap().unwrap();
    eventually(10, "the offers leave with the server", || async {
        client.list(None).await.unwrap().is_empty().then_some(())
    })
    .await;
}

#[tokio::test]
async fn only_register_allow_may_register_and_one_owner_holds_a_bounded_share() {
    let offers = |n: usize, endpoint: &str| -> Vec<Offer> {
        (0..n)
            .map(|i| Offer {
                service: "s".into(),
                endpoint: endpoint.into(),
                name: format!("o{i}"),
                response_time_ms: 1,
                throughput: 1.0,
                price: 1.0,
                compression: None,
                class: None,
                adapts_to: None,
            })
            .collect()
    };
    let broker = |extra: &str| {
        let text = format!(
            "[[service]]\nname = \"broker\"\npath = \"/qos\"\nbuiltin = \"qos-broker\"\n{extra}"
        );
        async move { TestServer::start(&text).await }
    };
    // Loopback is not in this list: registration and removal are refused, listing not.
    let closed = broker("register_allow = [\"10.0.0.0/8\"]\n").await;
    let client = BrokerClient::new(closed.url("/qos"), Duration::from_secs(5)).unwrap();
    let refused = client
        .register(&offers(1, "http://127.0.0.1:9/s"), Duration::from_secs(60))
        .await
        .unwrap_err();
    assert!(refused.to_string().contains("register_allow"), "{refused}");
    assert!(client.deregister("http://127.0.0.1:9/s").await.is_err());
    assert!(client.list(None).await.unwrap().is_empty());
    // The default lets this host in; one address holds at most max_offers_per_owner.
    let open = broker("max_offers_per_owner = 2\n").await;
    let client = BrokerClient::new(open.url("/qos"), Duration::from_secs(5)).unwrap();
    client
        .register(&offers(2, "http://127.0.0.1:9/s"), Duration::from_secs(60))
        .await
        .unwrap();
    let full = client
        .register(&offers(1, "http://127.0.0.1:9/t"), Duration::from_secs(60))
        .await
        .unwrap_err();
    assert!(full.to_string().contains("at most 2 offers"), "{full}");
}
