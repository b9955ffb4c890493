//! What the trace export tests share: loopback HTTP servers (an OTLP/HTTP collector
//! decoding the protobuf bodies, SOAP backends), a SOAP client, and span lookups.

#![allow(dead_code, reason = "each test file uses its own part of the harness")]

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Request, Response};
use hyper_util::rt::{TokioExecutor, TokioIo};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub(crate) const ENVELOPE: &str = r#"<soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Body><ns:echo xmlns:ns="urn:lather:echo"><text>hi</text></ns:echo></soap:Body></soap:Envelope>"#;

/// `lather COMMAND --config CONFIG` exporting its spans every 100 ms rather than every 5 s,
/// its output discarded.
pub(crate) fn exporting(command: &str, config: &std::path::Path) -> std::process::Child {
    std::process::Command::new(env!("CARGO_BIN_EXE_lather"))
        .arg(command)
        .arg("--config")
        .arg(config)
        .env("OTEL_BSP_SCHEDULE_DELAY", "100")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap()
}

/// Serves `answer` on a loopback port until the test's runtime ends; returns the address.
pub(crate) async fn serve<F, Fut>(answer: F) -> SocketAddr
where
    F: Fn(Request<Incoming>) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Response<Full<Bytes>>> + Send + 'static,
{
    serve_maybe_tls(None, answer).await
}

/// As [`serve`], over TLS with `tls` when given.
async fn serve_maybe_tls<F, Fut>(tls: Option<tokio_rustls::TlsAcceptor>, answer: F) -> SocketAddr
where
    F: Fn(Request<Incoming>) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Response<Full<Bytes>>> + Send + 'static,
{
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let answer = answer.clone();
            let tls = tls.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |req| {
                    let answer = answer.clone();
                    async move { Ok::<_, std::convert::Infallible>(answer(req).await) }
                });
                let http = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
                match tls {
                    None => {
                        let _ = http.serve_connection(TokioIo::new(stream), service).await;
                    }
                    Some(tls) => {
                        if let Ok(stream) = tls.accept(stream).await {
                            let _ = http.serve_connection(TokioIo::new(stream), service).await;
                        }
                    }
                }
            });
        }
    });
    addr
}

/// A TLS acceptor with a new self-signed certificate for `localhost`; the acceptor and
/// the certificate (PEM), which a client trusts to reach it.
pub(crate) fn self_signed_tls() -> (tokio_rustls::TlsAcceptor, String) {
    let made = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(made.signing_key.serialize_der().into());
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(vec![made.cert.der().clone()], key)
    .unwrap();
    (
        tokio_rustls::TlsAcceptor::from(Arc::new(config)),
        made.cert.pem(),
    )
}

/// The spans a collector received, by trace id (hex) and name.
#[derive(Default)]
pub(crate) struct Received(pub(crate) Vec<Span>);

impl Received {
    pub(crate) fn find(&self, trace_id: &str, name: &str) -> Option<Span> {
        self.0
            .iter()
            .find(|s| hex(&s.trace_id) == trace_id && s.name == name)
            .cloned()
    }
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

pub(crate) fn attribute(span: &Span, key: &str) -> Option<String> {
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
pub(crate) async fn post(url: &str, traceparent: Option<&str>) -> u16 {
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
pub(crate) async fn spans_of(
    received: &Mutex<Received>,
    trace_id: &str,
    names: &[&str],
) -> Vec<Span> {
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

/// An OTLP/HTTP collector on loopback: the spans it received and its address.
pub(crate) async fn collector() -> (Arc<Mutex<Received>>, SocketAddr) {
    collector_maybe_tls(None).await
}

/// An OTLP/HTTP collector over TLS with `tls`.
pub(crate) async fn tls_collector(
    tls: tokio_rustls::TlsAcceptor,
) -> (Arc<Mutex<Received>>, SocketAddr) {
    collector_maybe_tls(Some(tls)).await
}

async fn collector_maybe_tls(
    tls: Option<tokio_rustls::TlsAcceptor>,
) -> (Arc<Mutex<Received>>, SocketAddr) {
    let received = Arc::new(Mutex::new(Received::default()));
    let into = received.clone();
    let collector = serve_maybe_tls(tls, move |req: Request<Incoming>| {
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
    (received, collector)
}

/// A SOAP backend on loopback answering with the request's envelope; the `traceparent`
/// headers it received.
pub(crate) async fn echo_backend() -> (Arc<Mutex<Vec<String>>>, SocketAddr) {
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
    (seen, backend)
}
