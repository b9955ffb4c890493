//! Message streams over TLS: a gateway that negotiates with an `https://` upstream carries
//! the stream over TLS too — on the far side's stream port (which speaks TLS with the
//! listener's certificate and client authentication) or inside HTTP/2 on the URL's own
//! port — and never falls to a plain stream port; the stream port refuses a plain-text
//! preface.

use crate::support;

use bytes::Bytes;
use lather_envelope::{EnvelopeBuilder, SoapVersion};
use lather_pipeline::{Reply, ServiceFuture, ServiceRequest, SoapService};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use support::pki::{Issued, TestCa, TlsClient, scratch, tls_server_toml, write};
use support::*;

/// Keeps every envelope it gets; answers with how many it has.
#[derive(Clone, Default)]
struct Recorder {
    seen: Arc<Mutex<Vec<Bytes>>>,
}

impl SoapService for Recorder {
    fn call<'a>(&'a self, request: ServiceRequest<'a>) -> ServiceFuture<'a> {
        Box::pin(async move {
            let n = {
                let mut seen = self.seen.lock().unwrap();
                seen.push(request.envelope.as_bytes().clone());
                seen.len()
            };
            let version = request.envelope.version();
            let body = format!("<r:count xmlns:r=\"urn:r\">{n}</r:count>");
            Ok(Reply::Written(
                version,
                EnvelopeBuilder::new(version)
                    .body(Bytes::from(body))
                    .build(),
            ))
        })
    }
}

fn message(i: usize) -> String {
    envelope(
        SoapVersion::V12,
        "",
        &format!("<m:echo xmlns:m=\"urn:m\"><text>over TLS {i}</text></m:echo>"),
    )
}

/// The far side over TLS with `server`'s certificate, `tls_keys` in `[server.tls]`,
/// `stream_keys` in `[stream]` (its port `stream_port`), accepting streams for a gateway
/// to `backend`.
async fn far(
    dir: &std::path::Path,
    server: &Issued,
    tls_keys: &str,
    stream_keys: &str,
    backend: SocketAddr,
    stream_port: u16,
) -> TestServer {
    let services = format!(
        "[stream]\nlisten = \"127.0.0.1:{stream_port}\"\n{stream_keys}\n[[service]]\nname = \"far\"\npath = \"/far\"\nupstream = [\"http://{backend}/svc\"]\naccept_streams = true\n"
    );
    TestServer::start(&tls_server_toml(dir, server, tls_keys, &services)).await
}

/// The near gateway: plain HTTP towards its clients, `stream` to `https://localhost`
/// at `far`, trusting `ca_file`, with `extra` keys.
async fn near(far: &TestServer, stream: &str, ca_file: &str, extra: &str) -> TestServer {
    TestServer::start(&format!(
        "[[service]]\nname = \"near\"\npath = \"/near\"\nupstream = [\"https://localhost:{}/far\"]\nupstream_ca_file = {ca_file}\nstream = \"{stream}\"\nstream_retry_s = 1\ntimeout_ms = 5000\n{extra}",
        far.addr.port()
    ))
    .await
}

fn negotiations(text: &str, outcome: &str) -> f64 {
    metric(
        text,
        &format!("lather_stream_negotiations_total{{service=\"near\",outcome=\"{outcome}\"}}"),
    )
    .unwrap_or(0.0)
}

/// Sends messages until the near gateway reports a negotiation; its metrics then.
async fn until_negotiated(near: &TestServer) -> String {
    for i in 0..200 {
        let answer = post(near.addr, "/near", SoapVersion::V12, message(10_000 + i)).await;
        assert_eq!(answer.status, 200, "{}", answer.text());
        let text = get(near.addr, "/metrics").await.text().to_owned();
        if negotiations(&text, "opened") + negotiations(&text, "refused") > 0.0 {
            return text;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("no negotiation happened");
}

/// Sends ten messages through `near`; each must reach the recorder byte for byte and
/// all must have crossed the stream.
async fn ten_cross_the_stream(near: &TestServer, recorder: &Recorder) {
    let before = recorder.seen.lock().unwrap().len();
    let sent: Vec<String> = (0..10).map(message).collect();
    for m in &sent {
        let answer = post(near.addr, "/near", SoapVersion::V12, m.clone()).await;
        assert_eq!(answer.status, 200, "{}", answer.text());
    }
    let seen = recorder.seen.lock().unwrap().clone();
    for (got, want) in seen[before..].iter().zip(&sent) {
        assert_eq!(got, want.as_bytes(), "the service saw another message");
    }
    let text = get(near.addr, "/metrics").await.text().to_owned();
    let streamed = metric(
        &text,
        "lather_stream_messages_total{service=\"near\",way=\"stream\"}",
    )
    .unwrap();
    assert!(streamed >= 10.0, "{text}");
}

#[tokio::test]
async fn a_stream_negotiated_over_https_runs_over_tls_with_client_certificates() {
    let dir = scratch("stream-tls");
    let ca = TestCa::new("stream CA");
    let recorder = Recorder::default();
    let backend = serve_one("/svc", recorder.clone()).await;
    let stream_port = closed_port().await.port();
    let ca_file = write(&dir, "ca.pem", &ca.pem());
    // Client certificates required on the listener, and so on the stream port.
    let far = far(
        &dir,
        &ca.server("far", &[]),
        &format!("client_ca_file = {ca_file}\nclient_auth = \"required\"\n"),
        "",
        backend,
        stream_port,
    )
    .await;
    let client = ca.client("near-gateway");
    let cert = write(&dir, "client.pem", &client.cert_pem);
    let key = write(&dir, "client.key", &client.key_pem);
    let near = near(
        &far,
        "tcp",
        &ca_file,
        &format!("upstream_client_cert_file = {cert}\nupstream_client_key_file = {key}\n"),
    )
    .await;
    let text = until_negotiated(&near).await;
    assert_eq!(negotiations(&text, "opened"), 1.0, "{text}");
    ten_cross_the_stream(&near, &recorder).await;

    // The stream port speaks TLS: a plain preface gets no stream answer, and the far side
    // counts a failed handshake.
    let mut plain = tokio::net::TcpStream::connect(("127.0.0.1", stream_port))
        .await
        .unwrap();
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let preface = lather_context::stream::frame::preface(&"0".repeat(32));
    plain.write_all(&preface).await.unwrap();
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), plain.read_to_end(&mut answer)).await;
    assert!(
        !answer.starts_with(&lather_context::stream::frame::MAGIC),
        "the stream port answered a plain-text preface: {answer:?}"
    );
    let tls = TlsClient::new(&ca, Some(&client), &[b"http/1.1"]);
    let far_text = tls.get(far.addr, "/metrics").await.unwrap().answer;
    let failures: f64 = far_text
        .text()
        .lines()
        .filter(|l| l.starts_with("lather_tls_handshake_failures_total"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum();
    assert!(failures >= 1.0, "{}", far_text.text());
}

#[tokio::test]
async fn a_stream_over_http2_to_an_https_upstream_negotiates_h2_by_alpn() {
    let dir = scratch("stream-tls-h2");
    let ca = TestCa::new("stream CA");
    let recorder = Recorder::default();
    let backend = serve_one("/svc", recorder.clone()).await;
    let stream_port = closed_port().await.port();
    let far = far(&dir, &ca.server("far", &[]), "", "", backend, stream_port).await;
    let ca_file = write(&dir, "ca.pem", &ca.pem());
    let near = near(&far, "h2", &ca_file, "").await;
    let text = until_negotiated(&near).await;
    assert_eq!(negotiations(&text, "opened"), 1.0, "{text}");
    ten_cross_the_stream(&near, &recorder).await;
}

#[tokio::test]
async fn a_plain_stream_port_behind_an_https_negotiation_is_refused() {
    let dir = scratch("stream-tls-plain-port");
    let ca = TestCa::new("stream CA");
    let recorder = Recorder::default();
    let backend = serve_one("/svc", recorder.clone()).await;
    let stream_port = closed_port().await.port();
    // The listener speaks TLS, its stream port was told not to.
    let far = far(
        &dir,
        &ca.server("far", &[]),
        "",
        "tls = false",
        backend,
        stream_port,
    )
    .await;
    let ca_file = write(&dir, "ca.pem", &ca.pem());
    let near = near(&far, "tcp", &ca_file, "").await;
    let text = until_negotiated(&near).await;
    assert_eq!(negotiations(&text, "refused"), 1.0, "{text}");
    assert_eq!(negotiations(&text, "opened"), 0.0, "{text}");
    // Messages still reach the service, over HTTPS.
    let answer = post(near.addr, "/near", SoapVersion::V12, message(1)).await;
    assert_eq!(answer.status, 200, "{}", answer.text());
}
