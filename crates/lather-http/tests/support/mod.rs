//! Test harness: lather servers on `127.0.0.1:0`, tiny stand-in backends, a raw client.

#![allow(dead_code, unreachable_pub)]

pub mod pki;
pub mod sink;
pub mod worker;

use bytes::Bytes;
use http::{HeaderMap, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper_util::rt::{TokioExecutor, TokioIo};
use lather_config::Config;
use lather_envelope::{Envelope, FaultKind, Limits, SoapVersion};
use lather_test_util::ScratchDir;
use std::net::SocketAddr;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// A running lather server; stops when dropped.
pub struct TestServer {
    pub addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    pub done: Option<JoinHandle<Result<(), lather_http::ServeError>>>,
    /// The directory of files its configuration names (see [`TestServer::holding`]).
    scratch: Option<ScratchDir>,
}

impl TestServer {
    /// Starts a server from TOML; `{port}` in the text is not needed since the listener
    /// is always `127.0.0.1:0` unless the text sets `[server] listen`.
    pub async fn start(services_toml: &str) -> TestServer {
        let text = if services_toml.contains("[server]") {
            services_toml.to_owned()
        } else {
            format!("[server]\nlisten = \"127.0.0.1:0\"\n{services_toml}")
        };
        let config = Config::from_toml(&text, "test.toml").expect("test config");
        // An idle CPU reading: compression decisions do not depend on how busy the test
        // machine is (tests that need a load set their own gauge, see `start_with_gauge`).
        Self::start_with_gauge(&config, lather_qos::CpuGauge::manual(0)).await
    }

    /// Starts a server from `config` whose load-adaptive compression reads `gauge`.
    pub async fn start_with_gauge(
        config: &Config,
        gauge: std::sync::Arc<lather_qos::CpuGauge>,
    ) -> TestServer {
        let server = lather_http::Server::builder()
            .config(config)
            .cpu_gauge(gauge)
            .bind()
            .await
            .expect("bind");
        Self::serving(server)
    }

    /// Serves `server`, bound and set up by the test, until stopped.
    pub fn serving(server: lather_http::Server) -> TestServer {
        let addr = server.local_addr();
        let (stop, stopped) = oneshot::channel::<()>();
        let done = tokio::spawn(server.serve(async {
            let _ = stopped.await;
        }));
        TestServer {
            addr,
            stop: Some(stop),
            done: Some(done),
            scratch: None,
        }
    }

    /// The server, keeping `dir` (the files its configuration names) until it is dropped.
    pub fn holding(mut self, dir: ScratchDir) -> TestServer {
        self.scratch = Some(dir);
        self
    }

    /// An echo server.
    pub async fn echo() -> TestServer {
        Self::start("[[service]]\nname = \"echo\"\npath = \"/echo\"\nbuiltin = \"echo\"\n").await
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }

    /// Asks the server to stop and returns the task that finishes when it has.
    pub fn shutdown(&mut self) -> JoinHandle<Result<(), lather_http::ServeError>> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        self.done.take().expect("already shut down")
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// An answer as the test sees it.
#[derive(Debug)]
pub struct Answer {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Answer {
    pub fn text(&self) -> &str {
        std::str::from_utf8(&self.body).expect("utf-8 body")
    }

    /// Parses the body as an envelope.
    pub fn envelope(&self) -> Envelope {
        Envelope::parse(self.body.clone(), &Limits::default())
            .unwrap_or_else(|f| panic!("answer is not an envelope ({f}): {}", self.text()))
    }

    /// Asserts the answer is a lather fault of `kind` in `version` with the catalogue status.
    pub fn assert_fault(&self, kind: FaultKind, version: SoapVersion) {
        let env = self.envelope();
        assert!(env.is_fault(), "not a fault: {}", self.text());
        assert_eq!(env.version(), version, "{}", self.text());
        let name = format!("name=\"{}\"", kind.spec().name);
        assert!(
            self.text().contains(&name),
            "expected {name}: {}",
            self.text()
        );
        let expected = lather_envelope::Fault::new(kind).http_status(version);
        assert_eq!(self.status.as_u16(), expected, "{}", self.text());
        let ct = self.headers.get("content-type").unwrap().to_str().unwrap();
        assert!(ct.starts_with(version.media_type()), "{ct}");
    }
}

/// Sends one request on a fresh HTTP/1.1 connection.
pub async fn send(addr: SocketAddr, request: Request<Full<Bytes>>) -> Answer {
    let stream = TcpStream::connect(addr).await.expect("connect");
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .expect("handshake");
    tokio::spawn(conn);
    let response = sender.send_request(request).await.expect("response");
    collect(response).await
}

pub async fn collect(response: http::Response<hyper::body::Incoming>) -> Answer {
    let (parts, body) = response.into_parts();
    Answer {
        status: parts.status,
        headers: parts.headers,
        body: body.collect().await.expect("body").to_bytes(),
    }
}

/// A SOAP POST in `version` with the right content type and action.
pub fn soap_request(
    addr: SocketAddr,
    path: &str,
    version: SoapVersion,
    body: impl Into<Bytes>,
) -> Request<Full<Bytes>> {
    soap_request_with_action(addr, path, version, "urn:lather:echo#echo", body)
}

/// A SOAP POST in `version` with `action` as SOAPAction (1.1) or the `action` parameter
/// (1.2).
pub fn soap_request_with_action(
    addr: SocketAddr,
    path: &str,
    version: SoapVersion,
    action: &str,
    body: impl Into<Bytes>,
) -> Request<Full<Bytes>> {
    let builder = Request::post(format!("http://{addr}{path}")).header("host", addr.to_string());
    let builder = match version {
        SoapVersion::V11 => builder
            .header("content-type", "text/xml; charset=utf-8")
            .header("soapaction", format!("\"{action}\"")),
        SoapVersion::V12 => builder.header(
            "content-type",
            format!("application/soap+xml; charset=utf-8; action=\"{action}\""),
        ),
    };
    builder.body(Full::new(body.into())).unwrap()
}

pub async fn post(
    addr: SocketAddr,
    path: &str,
    version: SoapVersion,
    body: impl Into<Bytes>,
) -> Answer {
    send(addr, soap_request(addr, path, version, body)).await
}

/// [`post`] with `action`.
pub async fn post_with_action(
    addr: SocketAddr,
    path: &str,
    version: SoapVersion,
    action: &str,
    body: impl Into<Bytes>,
) -> Answer {
    send(
        addr,
        soap_request_with_action(addr, path, version, action, body),
    )
    .await
}

/// A gateway service `gw` at `/gw` forwarding to `upstreams` (5 s timeout), with `extra`
/// keys for it.
pub fn gateway_service(upstreams: &[String], extra: &str) -> String {
    let list: Vec<String> = upstreams.iter().map(|u| format!("\"{u}\"")).collect();
    format!(
        "[[service]]\nname = \"gw\"\npath = \"/gw\"\nupstream = [{}]\ntimeout_ms = 5000\n{extra}",
        list.join(", ")
    )
}

/// The SOAP 1.2 echo request, posted to the gateway service of [`gateway_service`].
pub async fn call_gateway(addr: SocketAddr) -> Answer {
    post(
        addr,
        "/gw",
        SoapVersion::V12,
        envelope(SoapVersion::V12, "", ECHO_PAYLOAD),
    )
    .await
}

/// A server with one event source, `events` at `/events`, and `extra` keys for it.
pub async fn event_source(extra: &str) -> TestServer {
    TestServer::start(&format!(
        "[[service]]\nname = \"events\"\npath = \"/events\"\nbuiltin = \"event-source\"\nnotify_allow = [\"127.0.0.1\"]\n{extra}"
    ))
    .await
}

pub async fn get(addr: SocketAddr, path: &str) -> Answer {
    let req = Request::get(format!("http://{addr}{path}"))
        .header("host", addr.to_string())
        .body(Full::new(Bytes::new()))
        .unwrap();
    send(addr, req).await
}

/// `GET {path}` until it answers other than 202 (at most `tries` times, 20 ms apart):
/// the polled answer (200), panicking on any other status or when it never comes.
pub async fn poll_answer(addr: SocketAddr, path: &str, tries: usize) -> Answer {
    for _ in 0..tries {
        let got = get(addr, path).await;
        match got.status.as_u16() {
            202 => tokio::time::sleep(std::time::Duration::from_millis(20)).await,
            200 => return got,
            other => panic!("{other}: {}", got.text()),
        }
    }
    panic!("no answer at {path} in time")
}

/// Subscribes `notify` (an `http://` address) to the event source at `/events` of `server`,
/// in WS-Eventing 2011 over SOAP 1.2; the answer must be 200.
pub async fn subscribe_events(server: SocketAddr, notify: &str) {
    const WSE11: &str = "http://www.w3.org/2011/03/ws-evt";
    const WSA10: &str = "http://www.w3.org/2005/08/addressing";
    let soap = SoapVersion::V12;
    let subscribe = envelope(
        soap,
        &format!(r#"<wsa:Action xmlns:wsa="{WSA10}">{WSE11}/Subscribe</wsa:Action>"#),
        &format!(
            r#"<wse:Subscribe xmlns:wse="{WSE11}" xmlns:wsa="{WSA10}"><wse:Delivery><wse:NotifyTo><wsa:Address>{notify}</wsa:Address></wse:NotifyTo></wse:Delivery></wse:Subscribe>"#
        ),
    );
    let answer = post_with_action(
        server,
        "/events",
        soap,
        &format!("{WSE11}/Subscribe"),
        subscribe,
    )
    .await;
    assert_eq!(answer.status, 200, "{}", answer.text());
}

/// An envelope in `version` whose body is `payload`.
pub fn envelope(version: SoapVersion, header: &str, payload: &str) -> String {
    let ns = version.namespace();
    format!(
        r#"<?xml version="1.0" encoding="UTF-8"?><s:Envelope xmlns:s="{ns}"><s:Header>{header}</s:Header><s:Body>{payload}</s:Body></s:Envelope>"#
    )
}

pub const ECHO_PAYLOAD: &str =
    r#"<ns:echo xmlns:ns="urn:lather:echo"><text>hello &amp; welcome</text></ns:echo>"#;

/// A stand-in backend: answers every request with `status`, `content_type` and `body`
/// after `delay_ms`. Returns its address.
pub async fn fixed_backend(
    status: u16,
    content_type: &'static str,
    body: &'static str,
    delay_ms: u64,
) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            tokio::spawn(async move {
                let svc = hyper::service::service_fn(move |_req| async move {
                    tokio::time::sleep(std::time::Duration::from_millis(delay_ms)).await;
                    let mut r = http::Response::new(Full::new(Bytes::from_static(body.as_bytes())));
                    *r.status_mut() = StatusCode::from_u16(status).unwrap();
                    r.headers_mut()
                        .insert("content-type", content_type.parse().unwrap());
                    Ok::<_, std::convert::Infallible>(r)
                });
                let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(stream), svc)
                    .await;
            });
        }
    });
    addr
}

/// A loopback port with nothing listening on it.
pub async fn closed_port() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    addr
}

/// Reads a value from `/metrics` text. With labels, e.g.
/// `lather_requests_total{service="echo",code="200"}`, it is the sum over every series of
/// that name whose labels begin with those given (so later labels, such as `operation`,
/// are summed over); without, the first line beginning with the text. `None` when no
/// series matches.
pub fn metric(text: &str, series: &str) -> Option<f64> {
    let value = |l: &str| l.rsplit(' ').next().and_then(|v| v.parse::<f64>().ok());
    let Some(base) = series.strip_suffix('}') else {
        return text.lines().find(|l| l.starts_with(series)).and_then(value);
    };
    let matching: Vec<f64> = text
        .lines()
        .filter(|l| {
            l.strip_prefix(base)
                .is_some_and(|rest| rest.starts_with(',') || rest.starts_with('}'))
        })
        .filter_map(value)
        .collect();
    (!matching.is_empty()).then(|| matching.iter().sum())
}

/// The text of the first `<name>…</name>` (an element written without attributes) in the
/// answer; panics, showing the answer, when there is none.
pub fn field(answer: &Answer, name: &str) -> String {
    let text = answer.text();
    let open = format!("<{name}>");
    let start = text
        .find(&open)
        .unwrap_or_else(|| panic!("no {name} in {text}"))
        + open.len();
    let end = text[start..].find(&format!("</{name}>")).unwrap() + start;
    text[start..end].to_owned()
}

/// Asserts an application fault (a service's own, outside lather's catalogue): its most
/// specific subcode and its status.
pub fn assert_app_fault(answer: &Answer, subcode: &str, status: u16) {
    assert!(
        answer.envelope().is_fault(),
        "not a fault: {}",
        answer.text()
    );
    assert!(
        answer.text().contains(&format!(":{subcode}</env:Value>")),
        "expected {subcode}: {}",
        answer.text()
    );
    assert_eq!(answer.status.as_u16(), status, "{}", answer.text());
}

/// Serves `service` at `path` on a free loopback port for the rest of the test; its address.
pub async fn serve_one(path: &str, service: impl lather_pipeline::SoapService) -> SocketAddr {
    let server = lather_http::Server::builder()
        .listen("127.0.0.1:0".parse().unwrap())
        .service(path, service)
        .bind()
        .await
        .unwrap();
    let addr = server.local_addr();
    tokio::spawn(server.serve(std::future::pending()));
    addr
}
