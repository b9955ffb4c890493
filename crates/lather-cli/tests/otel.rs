//! `[telemetry]`: `lather serve` exports its spans over OTLP/HTTP to a collector (a hyper
//! server in this test decoding the protobuf bodies), and the gateway's upstream request
//! carries the exported trace's `traceparent`.

mod serving;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Request, Response};
use hyper_util::rt::{TokioExecutor, TokioIo};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;
use serving::{Running, free_port, lather, temp_config, wait_healthy};
use std::future::Future;
use std::net::SocketAddr;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const ENVELOPE: &str = r#"<soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Body><ns:echo xmlns:ns="urn:lather:echo"><text>hi</text></ns:echo></soap:Body></soap:Envelope>"#;

/// Serves `answer` on a loopback port until the test's runtime ends; returns the address.
async fn serve<F, Fut>(answer: F) -> SocketAddr
where
    F: Fn(Request<Incoming>) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Response<Full<Bytes>>> + Send + 'static,
{
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let answer = answer.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |req| {
                    let answer = answer.clone();
                    async move { Ok::<_, std::convert::Infallible>(answer(req).await) }
                });
                let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    addr
}

/// The spans a collector received, by trace id (hex) and name.
#[derive(Default)]
struct Received(Vec<Span>);

impl Received {
    fn find(&self, trace_id: &str, name: &str) -> Option<Span> {
        self.0
            .iter()
            .find(|s| hex(&s.trace_id) == trace_id && s.name == name)
            .cloned()
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn attribute(span: &Span, key: &str) -> Option<String> {
    span.attributes
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| kv.value.as_ref()?.value.as_ref())
        .map(|v| match v {
            Value::StringValue(s) => s.clone(),
            Value::IntValue(i) => i.to_string(),
            other => format!("{other:?}"),
        })
}

/// Posts the envelope to `url` (with `traceparent` if given); the status.
async fn post(url: &str, traceparent: Option<&str>) -> u16 {
    let client = hyper_util::client::legacy::Client::builder(TokioExecutor::new())
        .build_http::<Full<Bytes>>();
    let mut req = Request::post(url)
        .header("content-type", "text/xml; charset=utf-8")
        .header("soapaction", "\"urn:lather:echo#echo\"");
    if let Some(t) = traceparent {
        req = req.header("traceparent", t);
    }
    let req = req
        .body(Full::new(Bytes::from_static(ENVELOPE.as_bytes())))
        .unwrap();
    let response = client.request(req).await.unwrap();
    let status = response.status().as_u16();
    let _ = response.into_body().collect().await;
    status
}

/// Waits (up to 20 s) until `trace_id` has spans named `names` at the collector.
async fn spans_of(received: &Mutex<Received>, trace_id: &str, names: &[&str]) -> Vec<Span> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let found: Vec<Option<Span>> = {
            let received = received.lock().unwrap();
            names.iter().map(|n| received.find(trace_id, n)).collect()
        };
        if found.iter().all(Option::is_some) {
            return found.into_iter().flatten().collect();
        }
        assert!(
            Instant::now() < deadline,
            "spans {names:?} of trace {trace_id} not exported; received {:?}",
            received
                .lock()
                .unwrap()
                .0
                .iter()
                .map(|s| (hex(&s.trace_id), s.name.clone()))
                .collect::<Vec<_>>()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gateway_request_is_exported_with_its_upstream_call_and_carries_its_traceparent() {
    // The collector: POST /v1/traces with an ExportTraceServiceRequest in protobuf.
    let received = Arc::new(Mutex::new(Received::default()));
    let into = received.clone();
    let collector = serve(move |req: Request<Incoming>| {
        let into = into.clone();
        async move {
            assert_eq!(req.uri().path(), "/v1/traces");
            let body = req.into_body().collect().await.unwrap().to_bytes();
            let export = ExportTraceServiceRequest::decode(body).unwrap();
            let spans = export
                .resource_spans
                .into_iter()
                .flat_map(|r| r.scope_spans)
                .flat_map(|s| s.spans);
            into.lock().unwrap().0.extend(spans);
            Response::builder()
                .header("content-type", "application/x-protobuf")
                .body(Full::new(Bytes::new()))
                .unwrap()
        }
    })
    .await;
    // The backend: answers with the request's envelope, keeping each `traceparent`.
    let seen = Arc::new(Mutex::new(Vec::<String>::new()));
    let into = seen.clone();
    let backend = serve(move |req: Request<Incoming>| {
        let into = into.clone();
        async move {
            if let Some(t) = req.headers().get("traceparent") {
                into.lock().unwrap().push(t.to_str().unwrap().to_owned());
            }
            let body = req.into_body().collect().await.unwrap().to_bytes();
            Response::builder()
                .header("content-type", "text/xml; charset=utf-8")
                .body(Full::new(body))
                .unwrap()
        }
    })
    .await;

    let port = free_port();
    let config = temp_config(
        "otel",
        "gateway.toml",
        &format!(
            "[server]\nlisten = \"127.0.0.1:{port}\"\n\n\
             [telemetry]\notlp_endpoint = \"http://{collector}\"\nservice_name = \"lather-test\"\n\
             export_timeout_ms = 5000\n\n\
             [handlers.log]\nkind = \"logging\"\n\n\
             [[service]]\nname = \"quotes\"\npath = \"/quotes\"\n\
             upstream = [\"http://{backend}/ws\"]\nrequest = [[\"log\"]]\n"
        ),
    );
    let child = lather()
        .arg("serve")
        .arg("--config")
        .arg(&config)
        // Export every 100 ms rather than every 5 s.
        .env("OTEL_BSP_SCHEDULE_DELAY", "100")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut running = Running(child);
    tokio::task::block_in_place(|| wait_healthy(port, &mut running.0));
    let url = format!("http://127.0.0.1:{port}/quotes");

    // A request without a trace context: a new trace, whose context the backend receives.
    assert_eq!(post(&url, None).await, 200);
    let forwarded = seen
        .lock()
        .unwrap()
        .pop()
        .expect("the backend got no traceparent");
    let parts: Vec<&str> = forwarded.split('-').collect();
    assert_eq!(parts.len(), 4, "{forwarded}");
    let trace_id = parts[1];
    let spans = spans_of(
        &received,
        trace_id,
        &[
            "soap.request",
            "upstream.call",
            "soap.stage",
            "soap.handler",
        ],
    )
    .await;
    let (request, upstream, stage, handler) = (&spans[0], &spans[1], &spans[2], &spans[3]);
    assert_eq!(
        attribute(request, "lather.service").as_deref(),
        Some("quotes")
    );
    assert_eq!(
        attribute(request, "soap.operation").as_deref(),
        Some("echo")
    );
    assert_eq!(
        attribute(request, "http.response.status_code").as_deref(),
        Some("200")
    );
    assert_eq!(
        attribute(request, "client.address").as_deref(),
        Some("127.0.0.1")
    );
    assert!(
        request.parent_span_id.is_empty(),
        "a new trace's request span is a root"
    );
    assert_eq!(upstream.parent_span_id, request.span_id);
    assert_eq!(stage.parent_span_id, request.span_id);
    assert_eq!(handler.parent_span_id, stage.span_id);
    assert_eq!(attribute(handler, "lather.handler").as_deref(), Some("log"));
    // The backend's traceparent names the upstream call's span as its parent.
    assert_eq!(parts[2], hex(&upstream.span_id));

    // A request with a trace context continues it: same trace id, the caller's span as
    // the request span's parent, and the backend sees that trace id, not the caller's span.
    let caller_trace = "4bf92f3577b34da6a3ce929d0e0e4736";
    let caller_span = "00f067aa0ba902b7";
    let incoming = format!("00-{caller_trace}-{caller_span}-01");
    assert_eq!(post(&url, Some(&incoming)).await, 200);
    let forwarded = seen
        .lock()
        .unwrap()
        .pop()
        .expect("the backend got no traceparent");
    assert!(
        forwarded.starts_with(&format!("00-{caller_trace}-")),
        "{forwarded}"
    );
    assert_ne!(
        forwarded, incoming,
        "the client's header was passed through unchanged"
    );
    let spans = spans_of(&received, caller_trace, &["soap.request", "upstream.call"]).await;
    assert_eq!(hex(&spans[0].parent_span_id), caller_span);
    assert_eq!(spans[1].parent_span_id, spans[0].span_id);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_collector_that_is_down_costs_a_warning_and_requests_are_answered() {
    use std::io::BufRead;
    let backend = serve(|req: Request<Incoming>| async move {
        let body = req.into_body().collect().await.unwrap().to_bytes();
        Response::builder()
            .header("content-type", "text/xml; charset=utf-8")
            .body(Full::new(body))
            .unwrap()
    })
    .await;
    // Nothing listens there.
    let down = free_port();
    let port = free_port();
    let config = temp_config(
        "otel",
        "down.toml",
        &format!(
            "[server]\nlisten = \"127.0.0.1:{port}\"\n\n\
             [telemetry]\notlp_endpoint = \"http://127.0.0.1:{down}\"\n\n\
             [[service]]\nname = \"quotes\"\npath = \"/quotes\"\n\
             upstream = [\"http://{backend}/ws\"]\n"
        ),
    );
    let mut child = lather()
        .arg("serve")
        .arg("--config")
        .arg(&config)
        .env("OTEL_BSP_SCHEDULE_DELAY", "100")
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (lines, warned) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            if lines.send(line).is_err() {
                break;
            }
        }
    });
    let mut running = Running(child);
    tokio::task::block_in_place(|| wait_healthy(port, &mut running.0));
    let url = format!("http://127.0.0.1:{port}/quotes");
    for _ in 0..3 {
        assert_eq!(post(&url, None).await, 200);
    }
    let line = tokio::task::block_in_place(|| {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match warned.recv_timeout(left) {
                Ok(line) if line.contains("trace export failed") => return line,
                Ok(_) => {}
                Err(e) => panic!("no warning about the collector: {e}"),
            }
        }
    });
    assert!(line.contains("WARN"), "{line}");
    assert!(
        line.contains(&format!("127.0.0.1:{down}/v1/traces")),
        "{line}"
    );
    // Still answering.
    assert_eq!(post(&url, None).await, 200);
}
