//! XPath 1.0 filters and gzip-compressed notifications of the `event-source` builtin, over
//! real HTTP: subscribers, publishers and sinks on 127.0.0.1.

use crate::support;

use bytes::Bytes;
use lather_envelope::{Envelope, FaultKind, Limits, QName, SoapVersion};
use lather_test_util::ScratchDir;
use std::io::Write;
use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::time::Duration;
use support::sink::Received;
use support::{Answer, TestServer, closed_port, event_source as source};
use tokio::sync::mpsc;

const WSE04: &str = "http://schemas.xmlsoap.org/ws/2004/08/eventing";
const WSE11: &str = "http://www.w3.org/2011/03/ws-evt";
const WSA10: &str = "http://www.w3.org/2005/08/addressing";
const LEV: &str = "urn:lather:eventing";
const XPATH04: &str = "http://www.w3.org/TR/1999/REC-xpath-19991116";
const XPATH11: &str = "http://www.w3.org/2011/03/ws-evt/Dialects/XPath10";
const TOPIC: &str = "urn:lather:eventing:topic";
const SOAP: SoapVersion = SoapVersion::V12;

/// A sink answering at once.
async fn sink() -> (SocketAddr, mpsc::UnboundedReceiver<Received>) {
    support::sink::sink(Duration::ZERO).await
}

async fn next(rx: &mut mpsc::UnboundedReceiver<Received>) -> Received {
    support::sink::next(rx, Duration::from_secs(5)).await
}

/// Asserts nothing more arrives at the sink (published events are queued before the
/// publish answer, and delivered within milliseconds).
async fn nothing_more(rx: &mut mpsc::UnboundedReceiver<Received>) {
    support::sink::nothing(rx, Duration::from_millis(300)).await;
}

async fn post(addr: SocketAddr, path: &str, action: &str, body: String) -> Answer {
    support::post_with_action(addr, path, SOAP, action, body).await
}

/// A Subscribe in `wse` to `notify` with `delivery_extra` in its Delivery and `extra` after
/// it. The Subscribe declares `t` = `urn:ev` (in scope on the Filter).
fn subscribe_body(wse: &str, notify: SocketAddr, delivery_extra: &str, extra: &str) -> String {
    format!(
        r#"<wse:Subscribe xmlns:wse="{wse}" xmlns:wsa="{WSA10}" xmlns:t="urn:ev"><wse:Delivery><wse:NotifyTo><wsa:Address>http://{notify}/sink</wsa:Address></wse:NotifyTo>{delivery_extra}</wse:Delivery>{extra}</wse:Subscribe>"#
    )
}

async fn try_subscribe(server: &TestServer, wse: &str, body: String) -> Answer {
    let headers = format!(
        r#"<wsa:Action xmlns:wsa="{WSA10}">{wse}/Subscribe</wsa:Action><wsa:MessageID xmlns:wsa="{WSA10}">urn:uuid:req-1</wsa:MessageID>"#
    );
    post(
        server.addr,
        "/events",
        &format!("{wse}/Subscribe"),
        support::envelope(SOAP, &headers, &body),
    )
    .await
}

async fn subscribe(server: &TestServer, wse: &str, body: String) {
    let answer = try_subscribe(server, wse, body).await;
    assert_eq!(answer.status, 200, "{}", answer.text());
    assert!(
        answer.text().contains("SubscribeResponse"),
        "{}",
        answer.text()
    );
}

/// Publishes `event`; returns how many notifications were queued.
async fn publish(server: &TestServer, event: &str) -> usize {
    let answer = post(
        server.addr,
        "/events/publish",
        "urn:ev/Changed",
        support::envelope(SOAP, "", event),
    )
    .await;
    assert_eq!(answer.status, 200, "{}", answer.text());
    let text = answer.text();
    let start = text.find("queued=\"").unwrap() + 8;
    text[start..start + text[start..].find('"').unwrap()]
        .parse()
        .unwrap()
}

fn xpath_filter(dialect: Option<&str>, expression: &str) -> String {
    match dialect {
        Some(d) => format!(r#"<wse:Filter Dialect="{d}">{expression}</wse:Filter>"#),
        None => format!(r#"<wse:Filter>{expression}</wse:Filter>"#),
    }
}

fn reading(site: &str, celsius: &str, tags: usize) -> String {
    let tags: String = (0..tags).map(|i| format!("<r:Tag>t{i}</r:Tag>")).collect();
    format!(
        r#"<r:Reading xmlns:r="urn:ev" unit="C"><r:Site>{site}</r:Site><r:c>{celsius}</r:c>{tags}</r:Reading>"#
    )
}

#[tokio::test]
async fn xpath_filters_pick_events_by_their_content() {
    let server = source("").await;
    // 2011 without Dialect (XPath is the default): a numeric comparison; the Filter
    // declares its own prefix.
    let (hot, mut hot_rx) = sink().await;
    let filter = r#"<wse:Filter xmlns:ev="urn:ev">ev:c &gt; 20</wse:Filter>"#;
    subscribe(&server, WSE11, subscribe_body(WSE11, hot, "", filter)).await;
    // 2004/08 with its XPath URI: functions, the prefix `t` declared on the Subscribe.
    let (north, mut north_rx) = sink().await;
    let filter = xpath_filter(
        Some(XPATH04),
        "count(t:Tag) &gt;= 2 and contains(t:Site, 'north')",
    );
    subscribe(&server, WSE04, subscribe_body(WSE04, north, "", &filter)).await;
    // 2011 with its XPath URI: an absolute path with predicates.
    let (frost, mut frost_rx) = sink().await;
    let filter = xpath_filter(
        Some(XPATH11),
        "/t:Reading[t:Site = 'north-1']/t:c[. &lt; 0]",
    );
    subscribe(&server, WSE11, subscribe_body(WSE11, frost, "", &filter)).await;

    let warm_north = reading("north-1", "21.5", 2);
    assert_eq!(publish(&server, &warm_north).await, 2);
    assert!(next(&mut hot_rx).await.plain().contains("<r:c>21.5</r:c>"));
    assert!(next(&mut north_rx).await.plain().contains("north-1"));

    assert_eq!(publish(&server, &reading("south", "-3", 1)).await, 0);

    let cold_north = reading("north-1", "-3", 3);
    assert_eq!(publish(&server, &cold_north).await, 2);
    let note = next(&mut north_rx).await.plain();
    assert!(
        note.contains("<r:c>-3</r:c>") && note.contains("t2"),
        "{note}"
    );
    let note = next(&mut frost_rx).await.plain();
    let env = Envelope::parse(Bytes::from(note.clone()), &Limits::default()).unwrap();
    let op = env.operation().expect("the event in the Body");
    assert_eq!(op, &QName::new("urn:ev", "Reading"), "{note}");

    // Same local names in another namespace: no filter takes it.
    let other = r#"<x:Reading xmlns:x="urn:other"><x:Site>north-1</x:Site><x:c>50</x:c><x:Tag/><x:Tag/></x:Reading>"#;
    assert_eq!(publish(&server, other).await, 0);

    nothing_more(&mut hot_rx).await;
    nothing_more(&mut north_rx).await;
    nothing_more(&mut frost_rx).await;
}

#[tokio::test]
async fn xpath_and_topic_filters_coexist_and_one_filter_serves_many() {
    let server = source("").await;
    let (a, mut a_rx) = sink().await;
    let (b, mut b_rx) = sink().await;
    let (c, mut c_rx) = sink().await;
    let same = xpath_filter(None, "t:Site = 'east'");
    subscribe(&server, WSE11, subscribe_body(WSE11, a, "", &same)).await;
    subscribe(&server, WSE04, subscribe_body(WSE04, b, "", &same)).await;
    let topic = format!(r#"<wse:Filter Dialect="{TOPIC}">t:Reading</wse:Filter>"#);
    subscribe(&server, WSE11, subscribe_body(WSE11, c, "", &topic)).await;
    assert_eq!(publish(&server, &reading("east", "1", 0)).await, 3);
    assert_eq!(publish(&server, &reading("west", "1", 0)).await, 1);
    assert!(next(&mut a_rx).await.plain().contains("east"));
    assert!(next(&mut b_rx).await.plain().contains("east"));
    assert!(next(&mut c_rx).await.plain().contains("east"));
    assert!(next(&mut c_rx).await.plain().contains("west"));
    nothing_more(&mut a_rx).await;
    nothing_more(&mut b_rx).await;
}

fn assert_fault_with(answer: &Answer, kind: FaultKind, details: &[&str]) {
    answer.assert_fault(kind, SOAP);
    let text = answer.text();
    for detail in details {
        assert!(text.contains(detail), "expected {detail}: {text}");
    }
}

#[tokio::test]
async fn bad_filters_and_compressions_are_refused_with_their_version_s_fault() {
    let server = source("").await;
    let sink_addr = closed_port().await;
    let dialects = |wse: &str| {
        [TOPIC, XPATH04, XPATH11].map(|d| {
            format!(r#"<wse:SupportedDialect xmlns:wse="{wse}">{d}</wse:SupportedDialect>"#)
        })
    };
    let cases: Vec<(&str, String, &str, FaultKind, Vec<String>)> = vec![
        // Not XPath 1.0: a bad expression.
        (
            WSE11,
            xpath_filter(None, "t:c &gt;"),
            "",
            FaultKind::CannotProcessFilter,
            vec!["not valid".into()],
        ),
        (
            WSE04,
            xpath_filter(None, "t:c &gt;"),
            "",
            FaultKind::InvalidEventingMessage,
            vec!["not valid".into()],
        ),
        // An undeclared prefix, an unknown function.
        (
            WSE11,
            xpath_filter(Some(XPATH11), "nope:c = 1"),
            "",
            FaultKind::CannotProcessFilter,
            vec!["nope".into(), "not declared".into()],
        ),
        (
            WSE11,
            xpath_filter(None, "frobnicate(t:c)"),
            "",
            FaultKind::CannotProcessFilter,
            vec!["cannot be evaluated".into()],
        ),
        // An empty XPath filter.
        (
            WSE11,
            xpath_filter(Some(XPATH11), "  "),
            "",
            FaultKind::EmptyFilter,
            vec![],
        ),
        // An unknown dialect lists the supported ones.
        (
            WSE11,
            xpath_filter(Some(&format!("{WSE11}/Dialects/XPath20")), "1"),
            "",
            FaultKind::FilteringRequestedUnavailable2011,
            dialects(WSE11).to_vec(),
        ),
        (
            WSE04,
            xpath_filter(Some("urn:example:sql"), "SELECT 1"),
            "",
            FaultKind::FilteringRequestedUnavailable,
            dialects(WSE04).to_vec(),
        ),
        // An unknown compression lists the supported ones.
        (
            WSE11,
            String::new(),
            r#"<lev:Compression xmlns:lev="urn:lather:eventing">br</lev:Compression>"#,
            FaultKind::UnsupportedCompression,
            ["gzip", "identity"]
                .map(|c| {
                    format!(
                        r#"<lev:SupportedCompression xmlns:lev="{LEV}">{c}</lev:SupportedCompression>"#
                    )
                })
                .to_vec(),
        ),
        (
            WSE04,
            String::new(),
            r#"<lev:Compression xmlns:lev="urn:lather:eventing">zstd</lev:Compression>"#,
            FaultKind::UnsupportedCompression,
            vec!["zstd".into(), "supported: gzip, identity".into()],
        ),
    ];
    for (wse, filter, delivery, kind, details) in cases {
        let answer = try_subscribe(
            &server,
            wse,
            subscribe_body(wse, sink_addr, delivery, &filter),
        )
        .await;
        let details: Vec<&str> = details.iter().map(String::as_str).collect();
        assert_fault_with(&answer, kind, &details);
    }
    let status = post(
        server.addr,
        "/events/publish",
        "urn:ev/Changed",
        support::envelope(SOAP, "", &reading("x", "1", 0)),
    )
    .await;
    assert!(
        status.text().contains(r#"queued="0""#),
        "nothing subscribed"
    );
}

#[tokio::test]
async fn an_xpath_subscription_survives_a_restart() {
    let dir = ScratchDir::new("eventing-xpath");
    let path = dir.join("subs.redb");
    let extra = format!("store = {:?}", path.display().to_string());
    let (addr, mut rx) = sink().await;
    {
        let mut server = source(&extra).await;
        let filter = r#"<wse:Filter xmlns:q="urn:ev">q:c &gt; 30</wse:Filter>"#;
        subscribe(&server, WSE11, subscribe_body(WSE11, addr, "", filter)).await;
        server.shutdown().await.unwrap().unwrap();
    }
    // The first server's store closes once its last task lets go of it.
    let mut server = None;
    for _ in 0..50 {
        let text = format!(
            "[server]\nlisten = \"127.0.0.1:0\"\n[[service]]\nname = \"events\"\npath = \"/events\"\nbuiltin = \"event-source\"\nnotify_allow = [\"127.0.0.1\"]\n{extra}\n"
        );
        let config = lather_config::Config::from_toml(&text, "test.toml").unwrap();
        if lather_http::Server::bind(&config).await.is_ok() {
            server = Some(());
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(server.is_some(), "the store could be reopened");
    let server = source(&extra).await;
    assert_eq!(publish(&server, &reading("a", "12", 0)).await, 0);
    assert_eq!(publish(&server, &reading("b", "31", 0)).await, 1);
    assert!(next(&mut rx).await.plain().contains("<r:Site>b</r:Site>"));
    nothing_more(&mut rx).await;
    drop(server);
}

/// `bytes` decompressed by the system's `gzip -dc` (an implementation independent of the
/// one lather compresses with).
fn gunzip(bytes: &[u8]) -> String {
    let mut child = Command::new("gzip")
        .arg("-dc")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("gzip on PATH");
    child.stdin.take().unwrap().write_all(bytes).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "gzip -dc failed");
    String::from_utf8(out.stdout).unwrap()
}

#[tokio::test]
async fn sinks_asking_for_gzip_get_large_notifications_gzipped() {
    let server = source("compress_min_bytes = 2048").await;
    let gzip = r#"<lev:Compression xmlns:lev="urn:lather:eventing">gzip</lev:Compression>"#;
    let (zipped, mut zipped_rx) = sink().await;
    subscribe(&server, WSE11, subscribe_body(WSE11, zipped, gzip, "")).await;
    let (plain, mut plain_rx) = sink().await;
    subscribe(&server, WSE04, subscribe_body(WSE04, plain, "", "")).await;
    let identity = r#"<lev:Compression xmlns:lev="urn:lather:eventing">identity</lev:Compression>"#;
    let (ident, mut ident_rx) = sink().await;
    subscribe(&server, WSE04, subscribe_body(WSE04, ident, identity, "")).await;

    let site = "north-".repeat(700);
    let large = reading(&site, "5", 10);
    assert_eq!(publish(&server, &large).await, 3);
    let got = next(&mut zipped_rx).await;
    assert_eq!(got.content_encoding.as_deref(), Some("gzip"));
    assert_eq!(&got.raw[..2], &[0x1f, 0x8b], "gzip magic");
    assert!(got.raw.len() < large.len() / 4, "{} bytes", got.raw.len());
    let notification = gunzip(&got.raw);
    let env = Envelope::parse(Bytes::from(notification.clone()), &Limits::default()).unwrap();
    assert_eq!(env.operation(), Some(&QName::new("urn:ev", "Reading")));
    assert!(notification.contains(&site), "the whole event");
    let wsa_action = env
        .header(&QName::new(WSA10, "Action"))
        .and_then(|b| env.header_text(b));
    assert_eq!(wsa_action.as_deref(), Some("urn:ev/Changed"));
    let plain_copy = next(&mut plain_rx).await.plain();
    assert!(plain_copy.contains(&site));
    assert!(next(&mut ident_rx).await.plain().contains(&site));

    // Below compress_min_bytes even a gzip sink gets it plain.
    let small = reading("s", "5", 0);
    assert_eq!(publish(&server, &small).await, 3);
    let got = next(&mut zipped_rx).await;
    assert!(got.plain().contains("<r:Site>s</r:Site>"));
    assert!(
        next(&mut plain_rx)
            .await
            .plain()
            .contains("<r:Site>s</r:Site>")
    );
    assert!(
        next(&mut ident_rx)
            .await
            .plain()
            .contains("<r:Site>s</r:Site>")
    );
}
