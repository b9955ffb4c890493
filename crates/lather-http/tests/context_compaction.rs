//! The header compaction pair over real sockets: a gateway with `context-compact` in front,
//! a gateway with `context-expand` behind, a context store beside them; the service at the
//! end sees the headers the client sent. Stale, unknown and tampered references fault; a
//! receiver without `context-expand` refuses the reference (mustUnderstand); a store that
//! is down leaves messages whole.

use crate::support;

use bytes::Bytes;
use lather_envelope::escape::escape_text;
use lather_envelope::{Element, EnvelopeBuilder, Limits, SoapVersion};
use lather_pipeline::{Reply, ServiceFuture, ServiceRequest, SoapService};
use std::net::SocketAddr;
use support::*;

const WSA: &str = "http://www.w3.org/2005/08/addressing";

/// Answers with every header block it received, each standing on its own, escaped.
struct Headers;

impl SoapService for Headers {
    fn call<'a>(&'a self, request: ServiceRequest<'a>) -> ServiceFuture<'a> {
        Box::pin(async move {
            let env = &request.envelope;
            let blocks: String = env
                .headers()
                .iter()
                .map(|b| {
                    format!(
                        "<h:block>{}</h:block>",
                        escape_text(&String::from_utf8_lossy(&env.extract_header(b)))
                    )
                })
                .collect();
            let version = env.version();
            let body = format!(r#"<h:got xmlns:h="urn:h">{blocks}</h:got>"#);
            Ok(Reply::Written(
                version,
                EnvelopeBuilder::new(version)
                    .body(Bytes::from(body))
                    .build(),
            ))
        })
    }
}

async fn backend() -> SocketAddr {
    serve_one("/svc", Headers).await
}

fn wsa_header(message_id: &str) -> String {
    format!(
        r#"<wsa:To xmlns:wsa="{WSA}">http://service.example/echo</wsa:To><wsa:Action xmlns:wsa="{WSA}">urn:example:echo</wsa:Action><wsa:MessageID xmlns:wsa="{WSA}">{message_id}</wsa:MessageID><wsa:ReplyTo xmlns:wsa="{WSA}"><wsa:Address>http://client.example/reply</wsa:Address><wsa:ReferenceParameters><x:Session xmlns:x="urn:x">42</x:Session></wsa:ReferenceParameters></wsa:ReplyTo><wsa:FaultTo xmlns:wsa="{WSA}"><wsa:Address>http://client.example/fault</wsa:Address></wsa:FaultTo>"#
    )
}

/// The header blocks the backend reported, sorted.
fn reported(answer: &Answer) -> Vec<String> {
    let payload = answer.envelope().extract_payload().expect("a payload");
    let got = Element::parse(&payload, &Limits::default()).unwrap();
    let mut blocks: Vec<String> = got.elements().map(|e| e.text()).collect();
    blocks.sort();
    blocks
}

/// The blocks of `header` as a receiver would report them, sorted.
fn blocks_of(header: &str) -> Vec<String> {
    let text = envelope(SoapVersion::V12, header, "<m:x xmlns:m=\"urn:m\"/>");
    let env = lather_envelope::Envelope::parse(Bytes::from(text), &Limits::default()).unwrap();
    let mut blocks: Vec<String> = env
        .headers()
        .iter()
        .map(|b| String::from_utf8_lossy(&env.extract_header(b)).into_owned())
        .collect();
    blocks.sort();
    blocks
}

struct Deployment {
    _store: TestServer,
    store_url: String,
    _far: TestServer,
    far: SocketAddr,
    near: TestServer,
}

async fn deployment() -> Deployment {
    let store = TestServer::start(
        "[[service]]\nname = \"ctx\"\npath = \"/ctx\"\nbuiltin = \"context-store\"\n",
    )
    .await;
    let store_url = store.url("/ctx");
    let backend = backend().await;
    let far = TestServer::start(&format!(
        "[handlers.expand]\nkind = \"context-expand\"\nstore = \"{store_url}\"\n\
         [[service]]\nname = \"far\"\npath = \"/far\"\nupstream = [\"http://{backend}/svc\"]\nrequest = [[\"expand\"]]\n"
    ))
    .await;
    let far_addr = far.addr;
    let near = TestServer::start(&format!(
        "[handlers.compact]\nkind = \"context-compact\"\nstore = \"{store_url}\"\n\
         [[service]]\nname = \"near\"\npath = \"/near\"\nupstream = [\"http://{far_addr}/far\"]\nrequest = [[\"compact\"]]\n"
    ))
    .await;
    Deployment {
        _store: store,
        store_url,
        _far: far,
        far: far_addr,
        near,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_service_behind_two_gateways_sees_the_headers_the_client_sent() {
    let d = deployment().await;
    for id in ["urn:uuid:1", "urn:uuid:2"] {
        let header = wsa_header(id);
        let answer = post(
            d.near.addr,
            "/near",
            SoapVersion::V12,
            envelope(SoapVersion::V12, &header, "<m:x xmlns:m=\"urn:m\"/>"),
        )
        .await;
        assert_eq!(answer.status, 200, "{}", answer.text());
        assert_eq!(
            reported(&answer),
            blocks_of(&header),
            "every block back, equal"
        );
    }
    // Both messages shared one context: the compactor made it once.
    let metrics = get(d.near.addr, "/metrics").await;
    let counter = |name: &str| {
        metric(
            metrics.text(),
            &format!("lather_context_{name}_total{{service=\"near\",handler=\"compact\"}}"),
        )
    };
    assert_eq!(counter("compacted"), Some(2.0), "{}", metrics.text());
    assert_eq!(counter("created"), Some(1.0), "{}", metrics.text());
    assert_eq!(counter("sent_whole"), Some(0.0), "{}", metrics.text());
}

/// A compacted message made by hand: the context created in the store, its reference.
async fn compacted(store_url: &str, blocks: &str, digest_of: &str) -> String {
    let store =
        lather_context::StoreClient::new(store_url, std::time::Duration::from_secs(5)).unwrap();
    let made = store
        .create(blocks, std::time::Duration::from_secs(60))
        .await
        .unwrap();
    let reference = lather_context::compaction::Reference {
        uri: made.uri,
        digest: lather_context::contents_digest(digest_of.as_bytes()),
    };
    envelope(
        SoapVersion::V12,
        &reference.to_block(SoapVersion::V12),
        "<m:x xmlns:m=\"urn:m\"/>",
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_tampered_and_unexpandable_references_fault() {
    let d = deployment().await;
    let to = format!(r#"<wsa:To xmlns:wsa="{WSA}">http://service.example/echo</wsa:To>"#);
    // Digest of other contents than stored: tampered or stale.
    let tampered = compacted(&d.store_url, &to, "<other/>").await;
    let answer = post(d.far, "/far", SoapVersion::V12, tampered).await;
    assert!(answer.envelope().is_fault(), "{}", answer.text());
    assert!(
        answer.text().contains(":UnresolvedContext<"),
        "{}",
        answer.text()
    );
    assert!(answer.text().contains("do not match"), "{}", answer.text());

    let unknown = lather_context::compaction::Reference {
        uri: "urn:uuid:00000000-0000-4000-8000-000000000000".to_owned(),
        digest: lather_context::contents_digest(to.as_bytes()),
    };
    let answer = post(
        d.far,
        "/far",
        SoapVersion::V12,
        envelope(
            SoapVersion::V12,
            &unknown.to_block(SoapVersion::V12),
            "<m:x xmlns:m=\"urn:m\"/>",
        ),
    )
    .await;
    assert!(
        answer.text().contains(":UnresolvedContext<"),
        "{}",
        answer.text()
    );
    assert!(
        answer.text().contains(&unknown.uri),
        "the fault names the URI: {}",
        answer.text()
    );

    // A block the expander does not list is refused, not added.
    let stray = r#"<y:Secret xmlns:y="urn:y">1</y:Secret>"#;
    let answer = post(
        d.far,
        "/far",
        SoapVersion::V12,
        compacted(&d.store_url, stray, stray).await,
    )
    .await;
    assert!(answer.text().contains("does not list"), "{}", answer.text());

    // A plain receiver does not understand the reference: MustUnderstand, not a message
    // quietly missing its headers.
    let echo = TestServer::echo().await;
    let good = compacted(&d.store_url, &to, &to).await;
    let answer = post(echo.addr, "/echo", SoapVersion::V12, good.clone()).await;
    answer.assert_fault(lather_envelope::FaultKind::MustUnderstand, SoapVersion::V12);
    // …while the expanding side takes it.
    let answer = post(d.far, "/far", SoapVersion::V12, good).await;
    assert_eq!(answer.status, 200, "{}", answer.text());
    assert_eq!(reported(&answer), blocks_of(&to));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_the_store_down_messages_go_whole() {
    let backend = backend().await;
    let dead = closed_port().await;
    let near = TestServer::start(&format!(
        "[handlers.compact]\nkind = \"context-compact\"\nstore = \"http://{dead}/ctx\"\nstore_timeout_ms = 2000\n\
         [[service]]\nname = \"near\"\npath = \"/near\"\nupstream = [\"http://{backend}/svc\"]\nrequest = [[\"compact\"]]\n"
    ))
    .await;
    let header = wsa_header("urn:uuid:3");
    let answer = post(
        near.addr,
        "/near",
        SoapVersion::V12,
        envelope(SoapVersion::V12, &header, "<m:x xmlns:m=\"urn:m\"/>"),
    )
    .await;
    assert_eq!(answer.status, 200, "{}", answer.text());
    assert_eq!(reported(&answer), blocks_of(&header));
}

#[tokio::test]
async fn the_pair_refuses_bad_settings_by_key() {
    for (handler, why) in [
        ("kind = \"context-compact\"\n", "store"),
        (
            "kind = \"context-compact\"\nstore = \"ftp://x\"\n",
            "http://",
        ),
        (
            "kind = \"context-expand\"\nstore = \"http://127.0.0.1:1/c\"\nttl_s = 5\n",
            "ttl_s",
        ),
        (
            "kind = \"context-expand\"\nstore = \"http://127.0.0.1:1/c\"\nheaders = [\"To\"]\n",
            "{namespace}local",
        ),
    ] {
        let text = format!(
            "[server]\nlisten = \"127.0.0.1:0\"\n[handlers.h]\n{handler}[[service]]\nname = \"e\"\npath = \"/e\"\nbuiltin = \"echo\"\nrequest = [[\"h\"]]\n"
        );
        let config = lather_config::Config::from_toml(&text, "t.toml").unwrap();
        let Err(e) = lather_http::Server::bind(&config).await else {
            panic!("accepted: {handler}");
        };
        assert!(e.to_string().contains(why), "{why}: {e}");
    }
}
