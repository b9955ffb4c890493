//! Negotiated message streams between two lather gateways over real sockets: the near
//! gateway (`stream = "tcp"`) negotiates with the far one (`accept_streams`, `[stream]`),
//! messages then cross the stream and reach the service byte for byte; a peer that is not
//! lather or does not accept streams keeps the near gateway on SOAP/HTTP; a shape beyond
//! the schemas goes plain; a stream lost with a request on it is a fault, never a silent
//! resend; hostile connections and bad keys are refused.

use crate::support;

use bytes::Bytes;
use lather_envelope::{EnvelopeBuilder, FaultKind, SoapVersion};
use lather_pipeline::{Reply, ServiceFuture, ServiceRequest, SoapService};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use support::*;

/// Keeps every envelope it gets, as bytes; answers with how many it has (after a pause of
/// a second when the body says `slow`).
#[derive(Clone, Default)]
struct Recorder {
    seen: Arc<Mutex<Vec<Bytes>>>,
}

impl SoapService for Recorder {
    fn call<'a>(&'a self, request: ServiceRequest<'a>) -> ServiceFuture<'a> {
        Box::pin(async move {
            let bytes = request.envelope.as_bytes().clone();
            if String::from_utf8_lossy(&bytes).contains("slow") {
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
            let n = {
                let mut seen = self.seen.lock().unwrap();
                seen.push(bytes);
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

impl Recorder {
    fn seen(&self) -> Vec<Bytes> {
        self.seen.lock().unwrap().clone()
    }
}

const WSA: &str = "http://www.w3.org/2005/08/addressing";

/// A message with a full WS-Addressing header, a MessageID and a body that change.
fn message(i: usize, text: &str) -> String {
    envelope(
        SoapVersion::V12,
        &format!(
            "<wsa:MessageID xmlns:wsa=\"{WSA}\">urn:uuid:00000000-0000-0000-0000-{i:012}</wsa:MessageID><wsa:To xmlns:wsa=\"{WSA}\">http://svc.example/echo</wsa:To><wsa:Action xmlns:wsa=\"{WSA}\">urn:echo</wsa:Action><wsa:ReplyTo xmlns:wsa=\"{WSA}\"><wsa:Address>http://client.example/r</wsa:Address></wsa:ReplyTo>"
        ),
        &format!("<m:echo xmlns:m=\"urn:m\"><text>{text} {i}</text></m:echo>"),
    )
}

/// The far gateway: accepts streams, forwards to `backend`.
async fn far(backend: SocketAddr, stream_keys: &str) -> TestServer {
    TestServer::start(&format!(
        "[stream]\n{stream_keys}\n[[service]]\nname = \"far\"\npath = \"/far\"\nupstream = [\"http://{backend}/svc\"]\naccept_streams = true\n"
    ))
    .await
}

/// The near gateway: streams to `upstream`.
async fn near(upstream: &str, extra: &str) -> TestServer {
    TestServer::start(&format!(
        "[[service]]\nname = \"near\"\npath = \"/near\"\nupstream = [\"{upstream}\"]\nstream = \"tcp\"\nstream_retry_s = 1\ntimeout_ms = 5000\n{extra}"
    ))
    .await
}

async fn metrics(server: &TestServer) -> String {
    get(server.addr, "/metrics").await.text().to_owned()
}

fn way(text: &str, way: &str) -> f64 {
    metric(
        text,
        &format!("lather_stream_messages_total{{service=\"near\",way=\"{way}\"}}"),
    )
    .unwrap_or(0.0)
}

fn negotiations(text: &str, outcome: &str) -> f64 {
    metric(
        text,
        &format!("lather_stream_negotiations_total{{service=\"near\",outcome=\"{outcome}\"}}"),
    )
    .unwrap_or(0.0)
}

/// Sends messages until the near gateway reports a negotiation (opened or refused); the
/// number sent. Streams are per operation: these are `{urn:m}echo`.
async fn until_negotiated(near: &TestServer) -> usize {
    until_negotiated_with(near, |i| message(10_000 + i, "warm")).await
}

async fn until_negotiated_with(near: &TestServer, make: impl Fn(usize) -> String) -> usize {
    let before = metrics(near).await;
    let done = negotiations(&before, "opened") + negotiations(&before, "refused");
    for i in 0..200 {
        let answer = post(near.addr, "/near", SoapVersion::V12, make(i)).await;
        assert_eq!(answer.status, 200, "{}", answer.text());
        let text = metrics(near).await;
        if negotiations(&text, "opened") + negotiations(&text, "refused") > done {
            return i + 1;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("no negotiation happened");
}

#[tokio::test]
async fn messages_cross_the_stream_and_reach_the_service_byte_for_byte() {
    let recorder = Recorder::default();
    let backend = serve_one("/svc", recorder.clone()).await;
    let far = far(backend, "").await;
    let near = near(&far.url("/far"), "").await;
    let warm = until_negotiated(&near).await;
    assert_eq!(negotiations(&metrics(&near).await, "opened"), 1.0);
    let sent: Vec<String> = (0..30)
        .map(|i| message(i, "hello & <b>"))
        .collect::<Vec<_>>();
    let sent: Vec<String> = sent
        .into_iter()
        .map(|m| m.replace("hello & <b>", "hello &amp; &lt;b&gt;"))
        .collect();
    for (i, m) in sent.iter().enumerate() {
        let answer = post(near.addr, "/near", SoapVersion::V12, m.clone()).await;
        assert_eq!(answer.status, 200, "{}", answer.text());
        assert!(
            answer
                .text()
                .contains(&format!(">{}</r:count>", warm + i + 1)),
            "{}",
            answer.text()
        );
        assert!(
            answer.headers["content-type"]
                .to_str()
                .unwrap()
                .starts_with("application/soap+xml")
        );
    }
    let seen = recorder.seen();
    for (got, want) in seen[warm..].iter().zip(&sent) {
        assert_eq!(got, want.as_bytes(), "the service saw another message");
    }
    let text = metrics(&near).await;
    assert!(way(&text, "stream") >= 30.0, "{text}");
    // The far gateway served them as requests of its own service, and what crossed the
    // stream was a fraction of the envelopes: one schema, then the changed values.
    let far_text = metrics(&far).await;
    let stream_in = metric(&far_text, "lather_stream_bytes_total{direction=\"in\"}").unwrap();
    let envelopes: usize = sent.iter().map(String::len).sum();
    assert!(
        stream_in > 0.0 && stream_in < envelopes as f64 / 4.0,
        "{stream_in} of {envelopes}"
    );
    assert!(
        metric(
            &far_text,
            "lather_requests_total{service=\"far\",code=\"200\"}"
        )
        .unwrap()
            >= 31.0,
        "{far_text}"
    );
}

#[tokio::test]
async fn soap_1_1_and_faults_cross_the_stream_with_their_status() {
    let far = TestServer::start(
        "[stream]\n[[service]]\nname = \"echo\"\npath = \"/echo\"\nbuiltin = \"echo\"\naccept_streams = true\n",
    )
    .await;
    let near = near(&far.url("/echo"), "").await;
    until_negotiated_with(&near, |_| envelope(SoapVersion::V12, "", ECHO_PAYLOAD)).await;
    let answer = post(
        near.addr,
        "/near",
        SoapVersion::V11,
        envelope(SoapVersion::V11, "", ECHO_PAYLOAD),
    )
    .await;
    assert_eq!(answer.status, 200, "{}", answer.text());
    assert!(
        answer.text().contains("hello &amp; welcome"),
        "{}",
        answer.text()
    );
    assert!(
        answer.headers["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/xml")
    );
    // A mustUnderstand header nobody understands: the far side's fault comes back as it is.
    let header = r#"<x:Must xmlns:x="urn:x" s:mustUnderstand="true">1</x:Must>"#;
    let answer = post(
        near.addr,
        "/near",
        SoapVersion::V12,
        envelope(SoapVersion::V12, header, ECHO_PAYLOAD),
    )
    .await;
    answer.assert_fault(FaultKind::MustUnderstand, SoapVersion::V12);
    assert!(way(&metrics(&near).await, "stream") >= 2.0);
}

#[tokio::test]
async fn a_peer_that_is_not_lather_keeps_the_gateway_on_soap_http() {
    const ANSWER: &str = r#"<s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope"><s:Body><p:ok xmlns:p="urn:plain"/></s:Body></s:Envelope>"#;
    let plain = fixed_backend(200, "application/soap+xml; charset=utf-8", ANSWER, 0).await;
    let near = near(&format!("http://{plain}/svc"), "").await;
    let sent = until_negotiated(&near).await;
    for i in 0..5 {
        let answer = post(near.addr, "/near", SoapVersion::V12, message(i, "x")).await;
        assert_eq!(answer.text(), ANSWER);
    }
    let text = metrics(&near).await;
    assert_eq!(negotiations(&text, "refused"), 1.0, "{text}");
    assert_eq!(way(&text, "stream"), 0.0);
    assert_eq!(way(&text, "plain_no_stream"), (sent + 5) as f64, "{text}");
}

#[tokio::test]
async fn a_lather_service_that_does_not_accept_streams_refuses_and_is_asked_again_later() {
    let recorder = Recorder::default();
    let backend = serve_one("/svc", recorder.clone()).await;
    let near = near(&format!("http://{backend}/svc"), "").await;
    until_negotiated(&near).await;
    // stream_retry_s = 1: a second negotiation after a second, refused again.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    until_negotiated(&near).await;
    assert_eq!(negotiations(&metrics(&near).await, "refused"), 2.0);
    // The refusal itself, as a client sees it.
    let offer = r#"<ls:OpenStream xmlns:ls="urn:lather:stream"><ls:Representation>lather-stream/1</ls:Representation><ls:Transport>tcp</ls:Transport><ls:OnError>fault</ls:OnError><ls:Operation>{urn:m}echo</ls:Operation></ls:OpenStream>"#;
    let answer = post(
        backend,
        "/svc",
        SoapVersion::V12,
        envelope(SoapVersion::V12, "", offer),
    )
    .await;
    assert_app_fault(&answer, "StreamRefused", 400);
    assert!(answer.text().contains("does not accept message streams"));
    // No OpenStream reached the service: lather answers it itself.
    assert!(
        recorder
            .seen()
            .iter()
            .all(|m| !String::from_utf8_lossy(m).contains("OpenStream"))
    );
}

#[tokio::test]
async fn offers_lather_cannot_take_are_refused_by_name() {
    let far = TestServer::start(
        "[stream]\n[[service]]\nname = \"echo\"\npath = \"/echo\"\nbuiltin = \"echo\"\naccept_streams = true\n",
    )
    .await;
    for (offer, why) in [
        (
            "<ls:Representation>fast-infoset</ls:Representation><ls:Transport>tcp</ls:Transport>",
            "no representation offered",
        ),
        (
            "<ls:Representation>lather-stream/1</ls:Representation><ls:Transport>udp</ls:Transport>",
            "no transport offered",
        ),
        ("", "names no ls:Representation"),
    ] {
        let body =
            format!(r#"<ls:OpenStream xmlns:ls="urn:lather:stream">{offer}</ls:OpenStream>"#);
        let answer = post(
            far.addr,
            "/echo",
            SoapVersion::V12,
            envelope(SoapVersion::V12, "", &body),
        )
        .await;
        assert_app_fault(&answer, "StreamRefused", 400);
        assert!(answer.text().contains(why), "{}", answer.text());
    }
}

#[tokio::test]
async fn a_shape_beyond_the_schemas_goes_as_plain_soap() {
    let recorder = Recorder::default();
    let backend = serve_one("/svc", recorder.clone()).await;
    let far = far(backend, "max_schemas = 1").await;
    let near = near(&far.url("/far"), "").await;
    until_negotiated(&near).await;
    // The same operation, another shape.
    let other_shape = envelope(
        SoapVersion::V12,
        "",
        "<m:echo xmlns:m=\"urn:m\"><a>1</a><b>2</b></m:echo>",
    );
    let before = metrics(&near).await;
    for m in [message(1, "a"), other_shape.clone(), message(2, "b")] {
        let answer = post(near.addr, "/near", SoapVersion::V12, m).await;
        assert_eq!(answer.status, 200, "{}", answer.text());
    }
    let after = metrics(&near).await;
    assert_eq!(
        way(&after, "plain_shape") - way(&before, "plain_shape"),
        1.0,
        "{after}"
    );
    assert_eq!(
        way(&after, "stream") - way(&before, "stream"),
        2.0,
        "{after}"
    );
    assert_eq!(recorder.seen().last().unwrap(), message(2, "b").as_bytes());
    assert!(recorder.seen().iter().any(|m| m == other_shape.as_bytes()));
}

/// A lather server from `toml` on a runtime of its own thread, to be killed whole.
struct Killable {
    addr: SocketAddr,
    runtime: Option<tokio::runtime::Runtime>,
}

impl Killable {
    fn start(toml: String) -> Killable {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let addr = runtime.block_on(async move {
            let config = lather_config::Config::from_toml(&toml, "far.toml").unwrap();
            let server = lather_http::Server::bind(&config).await.unwrap();
            let addr = server.local_addr();
            tokio::spawn(server.serve(std::future::pending()));
            addr
        });
        Killable {
            addr,
            runtime: Some(runtime),
        }
    }

    /// Ends every task and socket of the server at once, as a killed process would.
    fn kill(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_lost_with_a_request_on_it_is_a_fault_not_a_silent_resend() {
    let recorder = Recorder::default();
    let backend = serve_one("/svc", recorder.clone()).await;
    let toml = format!(
        "[server]\nlisten = \"127.0.0.1:0\"\n[stream]\n[[service]]\nname = \"far\"\npath = \"/far\"\nupstream = [\"http://{backend}/svc\"]\naccept_streams = true\n"
    );
    let mut far = tokio::task::spawn_blocking(move || Killable::start(toml))
        .await
        .unwrap();
    let near = near(&format!("http://{}/far", far.addr), "").await;
    until_negotiated(&near).await;
    let addr = near.addr;
    let slow =
        tokio::spawn(
            async move { post(addr, "/near", SoapVersion::V12, message(7, "slow")).await },
        );
    tokio::time::sleep(Duration::from_millis(300)).await;
    let far = tokio::task::spawn_blocking(move || {
        far.kill();
        far
    })
    .await
    .unwrap();
    let answer = slow.await.unwrap();
    answer.assert_fault(FaultKind::UpstreamFailed, SoapVersion::V12);
    assert!(
        answer.text().contains("stream was lost"),
        "{}",
        answer.text()
    );
    assert_eq!(way(&metrics(&near).await, "lost"), 1.0);
    // The next message finds the link closed and goes as SOAP/HTTP, to a far side that is gone.
    let answer = post(near.addr, "/near", SoapVersion::V12, message(8, "x")).await;
    answer.assert_fault(FaultKind::UpstreamUnavailable, SoapVersion::V12);
    drop(far);
}

#[tokio::test]
async fn stream_keys_are_checked() {
    for (toml, why) in [
        (
            "[[service]]\nname = \"e\"\npath = \"/e\"\nbuiltin = \"echo\"\naccept_streams = true\n",
            "accept_streams: needs a [stream] table",
        ),
        (
            "[[service]]\nname = \"e\"\npath = \"/e\"\nbuiltin = \"echo\"\nstream = \"tcp\"\n",
            "only a gateway",
        ),
        (
            "[[service]]\nname = \"g\"\npath = \"/g\"\nupstream = [\"http://127.0.0.1:1/\"]\nstream = \"udp\"\n",
            "unknown variant",
        ),
        (
            "[[service]]\nname = \"g\"\npath = \"/g\"\nupstream = [\"http://127.0.0.1:1/\"]\nstream = \"tcp\"\nstream_retry_s = 0\n",
            "stream_retry_s: must be at least 1",
        ),
        (
            "[stream]\nmax_schemas = 0\n",
            "stream.max_schemas must be at least 1",
        ),
        ("[stream]\nmax_schemas = 5000\n", "at most 4096"),
        ("[stream]\nlisten_on = \"x\"\n", "unknown field"),
    ] {
        let e = lather_config::Config::from_toml(toml, "t.toml").unwrap_err();
        assert!(e.to_string().contains(why), "{toml}: {e}");
    }
}

#[tokio::test]
async fn the_rust_client_streams_to_a_lather_service_and_falls_back_elsewhere() {
    use lather_context::stream::{OnError, SenderSettings, StreamingClient};
    let far = TestServer::start(
        "[stream]\n[[service]]\nname = \"echo\"\npath = \"/echo\"\nbuiltin = \"echo\"\naccept_streams = true\n",
    )
    .await;
    let client = StreamingClient::new(
        lather_client::Client::new(),
        SenderSettings {
            transport: lather_context::stream::StreamTransport::Tcp,
            on_error: OnError::Fault,
            retry: Duration::from_secs(60),
            timeout: Duration::from_secs(5),
            max_message_bytes: 1 << 20,
            max_streams: 8,
            tls: lather_client::OutboundTls::system(),
        },
    )
    .unwrap();
    let request = |i: usize| {
        let text = message(i, "from rust");
        lather_envelope::Envelope::parse(Bytes::from(text), &lather_envelope::Limits::default())
            .unwrap()
    };
    let url = far.url("/echo");
    let mut i = 0;
    while client
        .stats()
        .streamed
        .load(std::sync::atomic::Ordering::Relaxed)
        == 0
    {
        i += 1;
        assert!(i < 200, "the client never streamed");
        let answer = client
            .send(&url, &request(i), Some("urn:echo"))
            .await
            .unwrap();
        let payload = answer.envelope().unwrap().extract_payload().unwrap();
        assert!(
            String::from_utf8_lossy(&payload).contains(&format!("from rust {i}")),
            "{payload:?}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // A fault over the stream is the same error as over HTTP.
    let bad = envelope(
        SoapVersion::V12,
        r#"<x:Must xmlns:x="urn:x" s:mustUnderstand="true">1</x:Must>"#,
        "<m:echo xmlns:m=\"urn:m\"><text>f</text></m:echo>",
    );
    let bad =
        lather_envelope::Envelope::parse(Bytes::from(bad), &lather_envelope::Limits::default())
            .unwrap();
    let e = client.send(&url, &bad, None).await.unwrap_err();
    assert!(e.is_fault(), "{e}");
    assert_eq!(e.status(), Some(500));
    // A service that is not lather: answered over SOAP/HTTP, the negotiation refused.
    const ANSWER: &str = r#"<s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope"><s:Body><p:ok xmlns:p="urn:plain"/></s:Body></s:Envelope>"#;
    let plain = fixed_backend(200, "application/soap+xml; charset=utf-8", ANSWER, 0).await;
    for i in 0..3 {
        let answer = client
            .send(&format!("http://{plain}/svc"), &request(i), None)
            .await
            .unwrap();
        assert!(answer.envelope().unwrap().extract_payload().is_some());
    }
}

#[tokio::test]
async fn a_stream_carried_over_http2_reaches_the_service_byte_for_byte() {
    let recorder = Recorder::default();
    let backend = serve_one("/svc", recorder.clone()).await;
    // The far side's stream port is never used: the stream rides its HTTP port.
    let far = far(backend, "").await;
    let near = TestServer::start(&format!(
        "[[service]]\nname = \"near\"\npath = \"/near\"\nupstream = [\"{}\"]\nstream = \"h2\"\nstream_retry_s = 1\n",
        far.url("/far")
    ))
    .await;
    let warm = until_negotiated(&near).await;
    assert_eq!(negotiations(&metrics(&near).await, "opened"), 1.0);
    let sent: Vec<String> = (0..20).map(|i| message(i, "over h2")).collect();
    for m in &sent {
        let answer = post(near.addr, "/near", SoapVersion::V12, m.clone()).await;
        assert_eq!(answer.status, 200, "{}", answer.text());
    }
    for (got, want) in recorder.seen()[warm..].iter().zip(&sent) {
        assert_eq!(got, want.as_bytes());
    }
    assert!(way(&metrics(&near).await, "stream") >= 20.0);
    let far_text = metrics(&far).await;
    let stream_in = metric(&far_text, "lather_stream_bytes_total{direction=\"in\"}").unwrap();
    assert!(stream_in > 0.0, "{far_text}");
}

#[tokio::test]
async fn an_http2_stream_request_to_a_server_without_streams_is_refused() {
    let server = TestServer::echo().await;
    let stream = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    let (mut send, connection) = hyper::client::conn::http2::handshake(
        hyper_util::rt::TokioExecutor::new(),
        hyper_util::rt::TokioIo::new(stream),
    )
    .await
    .unwrap();
    tokio::spawn(connection);
    let request = http::Request::post(server.url("/echo"))
        .header("content-type", "application/vnd.lather.stream")
        .body(http_body_util::Full::new(Bytes::from_static(
            b"LSTR\x01\x00",
        )))
        .unwrap();
    let response = send.send_request(request).await.unwrap();
    assert_eq!(response.status(), 404);
}

#[tokio::test]
async fn a_stopping_server_answers_what_its_streams_hold() {
    let recorder = Recorder::default();
    let backend = serve_one("/svc", recorder.clone()).await;
    let mut far = far(backend, "").await;
    let near = near(&far.url("/far"), "").await;
    until_negotiated(&near).await;
    let before = way(&metrics(&near).await, "stream");
    let addr = near.addr;
    let slow =
        tokio::spawn(
            async move { post(addr, "/near", SoapVersion::V12, message(9, "slow")).await },
        );
    tokio::time::sleep(Duration::from_millis(300)).await;
    // SIGTERM's path: stop accepting, finish what is in flight (the grace is 30 s). The
    // server returns only once the stream's request has been answered by the service.
    tokio::time::timeout(Duration::from_secs(10), far.shutdown())
        .await
        .expect("the far server stopped")
        .unwrap()
        .unwrap();
    assert!(
        recorder
            .seen()
            .iter()
            .any(|m| String::from_utf8_lossy(m).contains("slow 9")),
        "the far server returned before the request on its stream was answered"
    );
    let answer = slow.await.unwrap();
    assert_eq!(answer.status, 200, "{}", answer.text());
    assert!(answer.text().contains("</r:count>"), "{}", answer.text());
    assert_eq!(way(&metrics(&near).await, "stream"), before + 1.0);
}
