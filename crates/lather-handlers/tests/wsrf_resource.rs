//! `wsrf-resource`: WS-ResourceProperties get/set, bookkeeping per message, durability
//! across a restart, no lost increments, bounds and faults.

use lather_envelope::{Element, Envelope, EnvelopeBuilder, FaultKind, Limits, QName, SoapVersion};
use lather_handlers::{MAX_PROPERTY_BYTES, RESOURCE_NS, WSRL_NS, WSRP_NS, WsrfResource};
use lather_pipeline::{Access, Context, Handler, Message, Parts, Verdict};
use lather_test_util::ScratchDir;
use std::sync::Arc;
use std::time::Duration;

fn message_v(version: SoapVersion, id: Option<&str>, body: &str) -> Message {
    let mut builder = EnvelopeBuilder::new(version)
        .body_namespaces(vec![("t".into(), "urn:t".into())])
        .body(body.to_owned().into());
    if let Some(id) = id {
        builder = builder.header(EnvelopeBuilder::text_element(
            RESOURCE_NS,
            "wsrf",
            "ResourceId",
            id,
        ));
    }
    let envelope = Envelope::parse(builder.build(), &Limits::default()).unwrap();
    Message::new(
        envelope,
        Context {
            id: 7,
            service: "svc".into(),
            ..Default::default()
        },
    )
}

fn message(id: Option<&str>, body: &str) -> Message {
    message_v(SoapVersion::V12, id, body)
}

fn get(property: &str) -> String {
    format!(
        r#"<wsrp:GetResourceProperty xmlns:wsrp="{WSRP_NS}" xmlns:lw="{RESOURCE_NS}">{property}</wsrp:GetResourceProperty>"#
    )
}

fn set(components: &str) -> String {
    format!(
        r#"<wsrp:SetResourceProperties xmlns:wsrp="{WSRP_NS}">{components}</wsrp:SetResourceProperties>"#
    )
}

const BUY: &str = r#"<m:Buy xmlns:m="urn:shop"><m:item>42</m:item></m:Buy>"#;

async fn call(handler: &WsrfResource, message: &Message) -> Verdict {
    handler.call(message).await
}

/// The Body's first child of a `Respond` verdict, checked to be named `local` in `ns`.
fn answer(verdict: Verdict, ns: &str, local: &str) -> Element {
    let Verdict::Respond(envelope) = verdict else {
        panic!("expected a response, got {verdict:?}");
    };
    let payload = envelope.extract_payload().unwrap();
    let root = Element::parse(&payload, &Limits::default()).unwrap();
    assert_eq!(root.name(), &QName::new(ns, local));
    root
}

fn fault_kind(verdict: Verdict) -> (FaultKind, String) {
    match verdict {
        Verdict::Fault(f) => (f.kind(), f.reason().to_owned()),
        other => panic!("expected a fault, got {other:?}"),
    }
}

/// The text of each element of `property` of resource `id`.
async fn values(handler: &WsrfResource, id: &str, property: &str) -> Vec<String> {
    let verdict = call(handler, &message(Some(id), &get(property))).await;
    answer(verdict, WSRP_NS, "GetResourcePropertyResponse")
        .elements()
        .map(Element::text)
        .collect()
}

async fn count(handler: &WsrfResource, id: &str) -> u64 {
    values(handler, id, "lw:MessageCount").await[0]
        .parse()
        .unwrap()
}

#[tokio::test]
async fn set_then_get_round_trips_the_property_element() {
    let dir = ScratchDir::new("wsrf");
    let h = WsrfResource::open(&dir.join("roundtrip.redb"), 100).unwrap();
    // `t` is declared on the Body, outside the property element: the stored element carries it.
    let update = set(r#"<wsrp:Update><t:Temp unit="C">21.5</t:Temp></wsrp:Update>"#);
    let verdict = call(&h, &message(Some("r1"), &update)).await;
    let done = answer(verdict, WSRP_NS, "SetResourcePropertiesResponse");
    assert_eq!(done.children().len(), 0);

    // Asked with another prefix for the same namespace, in SOAP 1.1: answered in 1.1.
    let ask = format!(
        r#"<wsrp:GetResourceProperty xmlns:wsrp="{WSRP_NS}" xmlns:x="urn:t">x:Temp</wsrp:GetResourceProperty>"#
    );
    let verdict = call(&h, &message_v(SoapVersion::V11, Some("r1"), &ask)).await;
    let Verdict::Respond(envelope) = &verdict else {
        panic!("{verdict:?}")
    };
    assert_eq!(envelope.version(), SoapVersion::V11);
    let response = answer(verdict, WSRP_NS, "GetResourcePropertyResponse");
    let temps: Vec<&Element> = response.elements().collect();
    assert_eq!(temps.len(), 1);
    assert_eq!(temps[0].name(), &QName::new("urn:t", "Temp"));
    assert_eq!(temps[0].attribute(&QName::new("", "unit")), Some("C"));
    assert_eq!(temps[0].text(), "21.5");

    // A property never set: an empty answer. Another resource: its own properties.
    assert!(values(&h, "r1", "t:Pressure").await.is_empty());
    let other = set("<wsrp:Update><t:Temp>3</t:Temp></wsrp:Update>");
    call(&h, &message(Some("r2"), &other)).await;
    assert_eq!(values(&h, "r1", "t:Temp").await, ["21.5"]);
    assert_eq!(values(&h, "r2", "t:Temp").await, ["3"]);
}

#[tokio::test]
async fn update_insert_and_delete_apply_together_or_not_at_all() {
    let dir = ScratchDir::new("wsrf");
    let h = WsrfResource::open(&dir.join("changes.redb"), 100).unwrap();
    let id = Some("log");
    let insert = set("<wsrp:Insert><t:Log>a</t:Log><t:Log>b</t:Log></wsrp:Insert>");
    call(&h, &message(id, &insert)).await;
    call(
        &h,
        &message(id, &set("<wsrp:Insert><t:Log>c</t:Log></wsrp:Insert>")),
    )
    .await;
    assert_eq!(values(&h, "log", "t:Log").await, ["a", "b", "c"]);

    let update = set(
        "<wsrp:Update><t:Log>only</t:Log></wsrp:Update><wsrp:Update><t:Size>1</t:Size></wsrp:Update>",
    );
    call(&h, &message(id, &update)).await;
    assert_eq!(values(&h, "log", "t:Log").await, ["only"]);
    assert_eq!(values(&h, "log", "t:Size").await, ["1"]);

    call(
        &h,
        &message(id, &set(r#"<wsrp:Delete ResourceProperty="t:Log"/>"#)),
    )
    .await;
    assert!(values(&h, "log", "t:Log").await.is_empty());
    assert_eq!(values(&h, "log", "t:Size").await, ["1"]);

    // The first component is fine, the second refused: neither is applied.
    let mixed = set(&format!(
        r#"<wsrp:Update><t:Size>2</t:Size></wsrp:Update><wsrp:Update><lw:MessageCount xmlns:lw="{RESOURCE_NS}">9</lw:MessageCount></wsrp:Update>"#
    ));
    let (kind, why) = fault_kind(call(&h, &message(id, &mixed)).await);
    assert_eq!(kind, FaultKind::InvalidResourceRequest);
    assert!(why.contains("MessageCount"), "{why}");
    assert_eq!(values(&h, "log", "t:Size").await, ["1"]);

    // A property may not outgrow its bound; the refused Insert leaves it as it was.
    let big = "x".repeat(MAX_PROPERTY_BYTES);
    let huge = set(&format!(
        "<wsrp:Insert><t:Size>{big}</t:Size></wsrp:Insert>"
    ));
    let (kind, why) = fault_kind(call(&h, &message(id, &huge)).await);
    assert_eq!(kind, FaultKind::InvalidResourceRequest);
    assert!(why.contains("at most 65536"), "{why}");
    assert_eq!(values(&h, "log", "t:Size").await, ["1"]);
}

#[tokio::test]
async fn other_operations_update_the_bookkeeping_and_go_on() {
    let dir = ScratchDir::new("wsrf");
    let h = WsrfResource::open(&dir.join("bookkeeping.redb"), 100).unwrap();
    for _ in 0..3 {
        let verdict = call(&h, &message(Some("cart"), BUY)).await;
        assert!(
            matches!(&verdict, Verdict::Continue(p) if p.is_empty()),
            "{verdict:?}"
        );
    }
    assert_eq!(count(&h, "cart").await, 3);
    let verdict = call(&h, &message(Some("cart"), &get("lw:LastOperation"))).await;
    let response = answer(verdict, WSRP_NS, "GetResourcePropertyResponse");
    let last = response.elements().next().unwrap();
    assert_eq!(last.name(), &QName::new(RESOURCE_NS, "LastOperation"));
    assert_eq!(
        last.resolve_qname(&last.text()),
        Some(QName::new("urn:shop", "Buy"))
    );
    // Get and Set are answered by the resource; they are not counted.
    call(
        &h,
        &message(Some("cart"), &set("<wsrp:Update><t:A/></wsrp:Update>")),
    )
    .await;
    assert_eq!(count(&h, "cart").await, 3);
    // A message naming no resource passes untouched.
    assert!(matches!(
        call(&h, &message(None, BUY)).await,
        Verdict::Continue(_)
    ));
}

#[tokio::test]
async fn counts_and_properties_survive_a_restart() {
    let dir = ScratchDir::new("wsrf");
    let path = dir.join("restart.redb");
    {
        let h = WsrfResource::open(&path, 100).unwrap();
        for _ in 0..4 {
            call(&h, &message(Some("kept"), BUY)).await;
        }
        call(
            &h,
            &message(
                Some("kept"),
                &set("<wsrp:Update><t:Temp>7</t:Temp></wsrp:Update>"),
            ),
        )
        .await;
    }
    let h = WsrfResource::open(&path, 100).unwrap();
    assert_eq!(count(&h, "kept").await, 4);
    assert_eq!(values(&h, "kept", "t:Temp").await, ["7"]);
    call(&h, &message(Some("kept"), BUY)).await;
    assert_eq!(count(&h, "kept").await, 5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_messages_on_one_resource_lose_no_increment() {
    let dir = ScratchDir::new("wsrf");
    let h = Arc::new(WsrfResource::open(&dir.join("concurrent.redb"), 100).unwrap());
    let tasks: Vec<_> = (0..50)
        .map(|_| {
            let h = h.clone();
            tokio::spawn(async move {
                let verdict = h.call(&message(Some("hot"), BUY)).await;
                assert!(matches!(verdict, Verdict::Continue(_)), "{verdict:?}");
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    assert_eq!(count(&h, "hot").await, 50);
}

#[tokio::test]
async fn new_resources_beyond_the_bound_are_refused() {
    let dir = ScratchDir::new("wsrf");
    let h = WsrfResource::open(&dir.join("bounded.redb"), 2).unwrap();
    for id in ["a", "b"] {
        assert!(matches!(
            call(&h, &message(Some(id), BUY)).await,
            Verdict::Continue(_)
        ));
    }
    let (kind, why) = fault_kind(call(&h, &message(Some("c"), BUY)).await);
    assert_eq!(kind, FaultKind::ResourceStoreFull);
    assert!(why.contains("\"c\""), "{why}");
    let (kind, _) = fault_kind(
        call(
            &h,
            &message(Some("c"), &set("<wsrp:Update><t:A/></wsrp:Update>")),
        )
        .await,
    );
    assert_eq!(kind, FaultKind::ResourceStoreFull);
    // Existing resources still work; destroying one makes room.
    assert!(matches!(
        call(&h, &message(Some("a"), BUY)).await,
        Verdict::Continue(_)
    ));
    let destroy = format!(r#"<wsrl:Destroy xmlns:wsrl="{WSRL_NS}"/>"#);
    let verdict = call(&h, &message(Some("a"), &destroy)).await;
    answer(verdict, WSRL_NS, "DestroyResponse");
    let (kind, _) = fault_kind(call(&h, &message(Some("a"), &get("t:A"))).await);
    assert_eq!(kind, FaultKind::ResourceUnknown);
    assert!(matches!(
        call(&h, &message(Some("c"), BUY)).await,
        Verdict::Continue(_)
    ));
    assert_eq!(count(&h, "c").await, 1);
}

#[tokio::test]
async fn resource_operations_without_a_known_resource_fault() {
    let dir = ScratchDir::new("wsrf");
    let h = WsrfResource::open(&dir.join("unknown.redb"), 100).unwrap();
    for body in [get("t:Temp"), set("<wsrp:Update><t:A/></wsrp:Update>")] {
        let (kind, why) = fault_kind(call(&h, &message(None, &body)).await);
        assert_eq!(kind, FaultKind::ResourceUnknown);
        assert!(why.contains("ResourceId"), "{why}");
    }
    let (kind, why) = fault_kind(call(&h, &message(Some("nobody"), &get("t:Temp"))).await);
    assert_eq!(kind, FaultKind::ResourceUnknown);
    assert!(why.contains("\"nobody\""), "{why}");
    let (kind, _) = fault_kind(call(&h, &message(Some(""), BUY)).await);
    assert_eq!(kind, FaultKind::ResourceUnknown);
    let long = "x".repeat(257);
    let (kind, _) = fault_kind(call(&h, &message(Some(&long), BUY)).await);
    assert_eq!(kind, FaultKind::ResourceUnknown);
}

#[tokio::test]
async fn a_dropped_call_leaves_its_change_whole() {
    let dir = ScratchDir::new("wsrf");
    let h = WsrfResource::open(&dir.join("dropped.redb"), 100).unwrap();
    let two = set("<wsrp:Update><t:A>1</t:A></wsrp:Update><wsrp:Update><t:B>2</t:B></wsrp:Update>");
    let msg = message(Some("d"), &two);
    {
        // Polled once (the store call starts on a blocking thread), then dropped, as a
        // timeout would.
        let mut future = h.call(&msg);
        let polled = futures_poll_once(&mut future).await;
        assert!(polled.is_none(), "the store call cannot be done at once");
    }
    // The transaction finishes whole on its thread: both properties, never one.
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        let verdict = call(&h, &message(Some("d"), &get("t:A"))).await;
        if let Verdict::Respond(_) = verdict {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{verdict:?}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(values(&h, "d", "t:A").await, ["1"]);
    assert_eq!(values(&h, "d", "t:B").await, ["2"]);
}

/// Polls `future` once; its output if it was ready.
async fn futures_poll_once<F: std::future::Future + Unpin>(future: &mut F) -> Option<F::Output> {
    std::future::poll_fn(|cx| {
        std::task::Poll::Ready(match std::pin::Pin::new(&mut *future).poll(cx) {
            std::task::Poll::Ready(v) => Some(v),
            std::task::Poll::Pending => None,
        })
    })
    .await
}

#[test]
fn declares_what_it_reads_and_writes_nothing() {
    let dir = ScratchDir::new("wsrf");
    let h = WsrfResource::open(&dir.join("access.redb"), 1).unwrap();
    assert_eq!(
        h.access(),
        Access::read_only(
            Parts::none()
                .header(QName::new(RESOURCE_NS, "ResourceId"))
                .body()
        )
    );
}
