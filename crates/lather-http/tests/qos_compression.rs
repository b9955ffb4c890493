//! Load-adaptive compression (WS-QoS, seed 004) over real sockets, with the CPU reading
//! driven through the server's gauge (`ServerBuilder::cpu_gauge`), never by load: a
//! client's `q:Compression` (none | required | server-decides) and a request with
//! `Accept-Encoding` alone, below and above `[qos] compress_below_cpu`; `[[qos.client]]`
//! rules for clients without the header; a bad header is a fault, and `mustUnderstand` on
//! it is honoured; `/metrics` counts what was compressed and what went plain for load.

use crate::support;

use bytes::Bytes;
use http::Request;
use http_body_util::Full;
use lather_config::Config;
use lather_envelope::{FaultKind, SoapVersion};
use lather_qos::CpuGauge;
use lather_test_util::ScratchDir;
use support::*;

const ECHO: &str = "[[service]]\nname = \"echo\"\npath = \"/echo\"\nbuiltin = \"echo\"\n";

/// A 16 KB echo request with the QoS header stating `compression` (none: no header).
fn request(
    addr: std::net::SocketAddr,
    compression: Option<&str>,
    accept_gzip: bool,
) -> Request<Full<Bytes>> {
    let header = compression.map_or_else(String::new, |c| {
        format!(
            r#"<q:QoS xmlns:q="urn:lather:qos" xmlns:s="http://www.w3.org/2003/05/soap-envelope" s:mustUnderstand="true"><q:Compression>{c}</q:Compression></q:QoS>"#
        )
    });
    let text = "lather ".repeat(16 * 1024 / 7);
    let payload = format!(r#"<ns:echo xmlns:ns="urn:lather:echo"><text>{text}</text></ns:echo>"#);
    let mut req = soap_request(
        addr,
        "/echo",
        SoapVersion::V12,
        envelope(SoapVersion::V12, &header, &payload),
    );
    if accept_gzip {
        req.headers_mut()
            .insert("accept-encoding", "gzip".parse().unwrap());
    }
    req
}

async fn gzipped(server: &TestServer, compression: Option<&str>, accept_gzip: bool) -> bool {
    let answer = send(server.addr, request(server.addr, compression, accept_gzip)).await;
    assert_eq!(answer.status, 200, "{}", answer.text());
    answer
        .headers
        .get("content-encoding")
        .is_some_and(|v| v == "gzip")
}

async fn server(extra: &str, gauge: std::sync::Arc<CpuGauge>) -> TestServer {
    let text = format!("[server]\nlisten = \"127.0.0.1:0\"\n{extra}{ECHO}");
    TestServer::start_with_gauge(&Config::from_toml(&text, "qos.toml").unwrap(), gauge).await
}

#[tokio::test]
async fn each_preference_is_honoured_below_and_above_the_cpu_threshold() {
    let gauge = CpuGauge::manual(20);
    let server = server("", gauge.clone()).await;
    // CPU below 80%: everything the client allows is compressed.
    assert!(gzipped(&server, Some("required"), false).await);
    assert!(gzipped(&server, Some("server-decides"), false).await);
    assert!(gzipped(&server, None, true).await);
    assert!(!gzipped(&server, Some("none"), true).await);
    assert!(!gzipped(&server, None, false).await);
    // CPU at 80%: only what the client requires.
    gauge.set(80);
    assert!(gzipped(&server, Some("required"), false).await);
    assert!(!gzipped(&server, Some("server-decides"), true).await);
    assert!(!gzipped(&server, None, true).await);
    assert!(!gzipped(&server, Some("none"), true).await);
    gauge.set(79);
    assert!(gzipped(&server, None, true).await);
    let metrics = get(server.addr, "/metrics").await;
    assert_eq!(
        metric(metrics.text(), "lather_responses_plain_for_load_total"),
        Some(2.0),
        "{}",
        metrics.text()
    );
    assert_eq!(
        metric(metrics.text(), "lather_responses_compressed_total"),
        Some(5.0)
    );
    assert_eq!(metric(metrics.text(), "lather_cpu_percent"), Some(79.0));
}

#[tokio::test]
async fn the_threshold_and_client_rules_come_from_the_config() {
    let gauge = CpuGauge::manual(50);
    let server = server(
        "[qos]\ncompress_below_cpu = 40\n\
         [[qos.client]]\naddress = \"127.0.0.0/8\"\npath = \"/echo\"\ncompression = \"required\"\n",
        gauge.clone(),
    )
    .await;
    // Loopback clients of /echo require compression by rule, whatever the load.
    assert!(gzipped(&server, None, false).await);
    // Their own header overrides the rule: server-decides at 50% against 40% goes plain.
    assert!(!gzipped(&server, Some("server-decides"), true).await);
    gauge.set(39);
    assert!(gzipped(&server, Some("server-decides"), true).await);
}

#[tokio::test]
async fn a_bad_qos_header_is_a_fault_and_must_understand_is_honoured() {
    let server = server("", CpuGauge::manual(0)).await;
    let bad = send(server.addr, request(server.addr, Some("sometimes"), true)).await;
    bad.assert_fault(FaultKind::InvalidQosRequirements, SoapVersion::V12);
    assert!(bad.text().contains("sometimes"), "{}", bad.text());
    // The header carries mustUnderstand="true" in every request here: it is understood.
    let fine = send(server.addr, request(server.addr, Some("none"), true)).await;
    assert_eq!(fine.status, 200, "{}", fine.text());
}

/// A `[[qos.client]]` rule may name the identity the request flow authenticated
/// (`wsse-username`): alice's answers are compressed, bob's are not.
#[tokio::test]
async fn a_client_rule_matches_the_authenticated_identity() {
    let dir = ScratchDir::new("qos-identity");
    let users = dir.write("users", "alice:s3cret\nbob:hunter2\n");
    let text = format!(
        "[server]\nlisten = \"127.0.0.1:0\"\n\
         [[qos.client]]\nidentity = \"alice\"\ncompression = \"required\"\n\
         [handlers.auth]\nkind = \"wsse-username\"\nusers_file = \"{}\"\n\
         [[service]]\nname = \"echo\"\npath = \"/echo\"\nbuiltin = \"echo\"\nrequest = [[\"auth\"]]\n",
        users.display()
    );
    let s = TestServer::start_with_gauge(
        &Config::from_toml(&text, "qos.toml").unwrap(),
        CpuGauge::manual(0),
    )
    .await;
    let call = |user: &str, password: &str| {
        let security = format!(
            r#"<wsse:Security xmlns:wsse="{}"><wsse:UsernameToken><wsse:Username>{user}</wsse:Username><wsse:Password>{password}</wsse:Password></wsse:UsernameToken></wsse:Security>"#,
            lather_envelope::WSSE_NS
        );
        let payload = format!(
            r#"<ns:echo xmlns:ns="urn:lather:echo"><text>{}</text></ns:echo>"#,
            "lather ".repeat(400)
        );
        // No Accept-Encoding: only the rule's `required` compresses.
        soap_request(
            s.addr,
            "/echo",
            SoapVersion::V12,
            envelope(SoapVersion::V12, &security, &payload),
        )
    };
    let alice = send(s.addr, call("alice", "s3cret")).await;
    assert_eq!(alice.status, 200, "{}", alice.text());
    assert_eq!(alice.headers.get("content-encoding").unwrap(), "gzip");
    let bob = send(s.addr, call("bob", "hunter2")).await;
    assert_eq!(bob.status, 200, "{}", bob.text());
    assert!(bob.headers.get("content-encoding").is_none());
}
