//! A gateway steps around failed backends: a black-holed backend costs an idempotent
//! request one try timeout and is then ejected; a request that may not be sent twice is
//! not; refused backends are skipped, ejected and taken back once they answer; health
//! checks take a failing backend out and bring it back; weights and least-outstanding
//! balancing spread the requests as configured.

use crate::support;

use bytes::Bytes;
use http::StatusCode;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::{TokioExecutor, TokioIo};
use lather_envelope::{FaultKind, SoapVersion};
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;
use support::*;
use tokio::net::TcpListener;

const ANSWER: &str = r#"<s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope"><s:Body><ok/></s:Body></s:Envelope>"#;

/// A backend counting the SOAP requests it answers; `GET` answers 200 while `healthy`,
/// else 503; a request whose body contains `slow` is answered after 3 s.
struct Counting {
    addr: SocketAddr,
    posts: Arc<AtomicUsize>,
    healthy: Arc<AtomicBool>,
}

impl Counting {
    async fn start() -> Counting {
        Self::on(TcpListener::bind("127.0.0.1:0").await.unwrap())
    }

    fn on(listener: TcpListener) -> Counting {
        let addr = listener.local_addr().unwrap();
        let posts = Arc::new(AtomicUsize::new(0));
        let healthy = Arc::new(AtomicBool::new(true));
        let (p, h) = (posts.clone(), healthy.clone());
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let (p, h) = (p.clone(), h.clone());
                tokio::spawn(async move {
                    let svc = hyper::service::service_fn(
                        move |req: http::Request<hyper::body::Incoming>| {
                            let (p, h) = (p.clone(), h.clone());
                            async move {
                                let get = req.method() == http::Method::GET;
                                let body = req.into_body().collect().await.unwrap().to_bytes();
                                let mut status = StatusCode::OK;
                                if get {
                                    if !h.load(Ordering::SeqCst) {
                                        status = StatusCode::SERVICE_UNAVAILABLE;
                                    }
                                } else {
                                    p.fetch_add(1, Ordering::SeqCst);
                                    if body.windows(4).any(|w| w == b"slow") {
                                        tokio::time::sleep(Duration::from_secs(3)).await;
                                    }
                                }
                                let mut r = http::Response::new(Full::new(Bytes::from_static(
                                    ANSWER.as_bytes(),
                                )));
                                *r.status_mut() = status;
                                r.headers_mut().insert(
                                    "content-type",
                                    "application/soap+xml; charset=utf-8".parse().unwrap(),
                                );
                                Ok::<_, std::convert::Infallible>(r)
                            }
                        },
                    );
                    let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                        .serve_connection(TokioIo::new(stream), svc)
                        .await;
                });
            }
        });
        Counting {
            addr,
            posts,
            healthy,
        }
    }

    fn url(&self) -> String {
        format!("http://{}/ws", self.addr)
    }

    fn posts(&self) -> usize {
        self.posts.load(Ordering::SeqCst)
    }
}

/// A listener that accepts connections and never reads or answers; counts them.
async fn black_hole() -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let accepted = Arc::new(AtomicUsize::new(0));
    let count = accepted.clone();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((stream, _)) = listener.accept().await {
            count.fetch_add(1, Ordering::SeqCst);
            held.push(stream);
        }
    });
    (format!("http://{addr}/ws"), accepted)
}

fn gateway(upstreams: &str, extra: &str) -> String {
    format!("[[service]]\nname = \"gw\"\npath = \"/gw\"\nupstream = [{upstreams}]\n{extra}")
}

async fn call(addr: SocketAddr, text: &str) -> Answer {
    let payload = format!(r#"<ns:echo xmlns:ns="urn:lather:echo"><text>{text}</text></ns:echo>"#);
    post(
        addr,
        "/gw",
        SoapVersion::V12,
        envelope(SoapVersion::V12, "", &payload),
    )
    .await
}

async fn state_of(gw: SocketAddr, url: &str) -> Option<f64> {
    let text = get(gw, "/metrics").await.text().to_owned();
    metric(
        &text,
        &format!("lather_upstream_state{{service=\"gw\",backend=\"{url}\"}}"),
    )
}

/// Polls `/metrics` until `url`'s state is `want` (within 10 s).
async fn wait_state(gw: SocketAddr, url: &str, want: f64) {
    for _ in 0..200 {
        if state_of(gw, url).await == Some(want) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!(
        "{url} never reached state {want}: {:?}",
        state_of(gw, url).await
    );
}

#[tokio::test]
async fn a_black_holed_backend_costs_idempotent_requests_one_try_and_is_ejected() {
    let (hole, accepted) = black_hole().await;
    let good = Counting::start().await;
    let gw = TestServer::start(&gateway(
        &format!("\"{hole}\", \"{}\"", good.url()),
        "timeout_ms = 10000\nidempotent_operations = [\"echo\"]\ntry_timeout_ms = 300\neject_after_failures = 2\neject_ms = 60000\n",
    ))
    .await;
    for i in 0..10 {
        let answer = call(gw.addr, "x").await;
        assert_eq!(
            answer.status,
            StatusCode::OK,
            "request {i}: {}",
            answer.text()
        );
    }
    assert_eq!(
        good.posts(),
        10,
        "every request was answered by the good backend"
    );
    wait_state(gw.addr, &hole, 1.0).await;
    assert_eq!(state_of(gw.addr, &good.url()).await, Some(0.0));
    // Two tries before the ejection, none after it.
    assert_eq!(accepted.load(Ordering::SeqCst), 2);
    let metrics = get(gw.addr, "/metrics").await.text().to_owned();
    assert_eq!(
        metric(
            &metrics,
            &format!(
                "lather_upstream_failures_total{{service=\"gw\",backend=\"{hole}\",kind=\"timeout\"}}"
            )
        ),
        Some(2.0),
        "{metrics}"
    );
}

#[tokio::test]
async fn a_request_that_may_not_be_sent_twice_gets_the_timeout_fault() {
    let (hole, _) = black_hole().await;
    let good = Counting::start().await;
    // The black hole is first in turn.
    let gw = TestServer::start(&gateway(
        &format!("\"{hole}\", \"{}\"", good.url()),
        "timeout_ms = 400\n",
    ))
    .await;
    let answer = call(gw.addr, "x").await;
    answer.assert_fault(FaultKind::UpstreamTimeout, SoapVersion::V12);
    assert!(
        answer
            .text()
            .contains("backend 1 of 2 did not answer within 400 ms"),
        "{}",
        answer.text()
    );
    assert!(!answer.text().contains("127.0.0.1"), "{}", answer.text());
    assert_eq!(good.posts(), 0, "not sent a second time");
}

#[tokio::test]
async fn backend_errors_are_named_to_clients_only_when_exposed() {
    let closed = closed_port().await;
    let url = format!("http://{closed}/ws");
    let hidden = TestServer::start(&gateway(&format!("\"{url}\""), "")).await;
    let answer = call(hidden.addr, "x").await;
    answer.assert_fault(FaultKind::UpstreamUnavailable, SoapVersion::V12);
    assert!(
        !answer.text().contains(&closed.to_string()),
        "{}",
        answer.text()
    );
    let exposed = TestServer::start(&gateway(
        &format!("\"{url}\""),
        "expose_backend_errors = true\n",
    ))
    .await;
    let answer = call(exposed.addr, "x").await;
    answer.assert_fault(FaultKind::UpstreamUnavailable, SoapVersion::V12);
    assert!(answer.text().contains(&url), "{}", answer.text());
}

#[tokio::test]
async fn a_refused_backend_is_ejected_and_taken_back_once_it_answers() {
    let closed = closed_port().await;
    let url = format!("http://{closed}/ws");
    let good = Counting::start().await;
    let gw = TestServer::start(&gateway(
        &format!("\"{url}\", \"{}\"", good.url()),
        "eject_after_failures = 1\neject_ms = 1000\n",
    ))
    .await;
    for _ in 0..4 {
        assert_eq!(call(gw.addr, "x").await.status, StatusCode::OK);
    }
    assert_eq!(good.posts(), 4);
    assert_eq!(state_of(gw.addr, &url).await, Some(1.0));
    // The backend comes up on its port.
    let back = Counting::on(TcpListener::bind(closed).await.unwrap());
    let mut tries = 0;
    while back.posts() == 0 {
        tries += 1;
        assert!(tries < 200, "the backend was never tried again");
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(call(gw.addr, "x").await.status, StatusCode::OK);
    }
    assert_eq!(state_of(gw.addr, &url).await, Some(0.0));
    let before = back.posts();
    for _ in 0..4 {
        assert_eq!(call(gw.addr, "x").await.status, StatusCode::OK);
    }
    assert_eq!(back.posts(), before + 2, "back in the rotation");
}

#[tokio::test]
async fn health_checks_take_a_failing_backend_out_and_bring_it_back() {
    let a = Counting::start().await;
    let b = Counting::start().await;
    let gw = TestServer::start(&gateway(
        &format!("\"{}\", \"{}\"", a.url(), b.url()),
        "[service.health_check]\ninterval_ms = 300\ntimeout_ms = 300\nunhealthy_after = 2\nhealthy_after = 2\n",
    ))
    .await;
    b.healthy.store(false, Ordering::SeqCst);
    wait_state(gw.addr, &b.url(), 2.0).await;
    let before = b.posts();
    for _ in 0..6 {
        assert_eq!(call(gw.addr, "x").await.status, StatusCode::OK);
    }
    assert_eq!(
        b.posts(),
        before,
        "a backend down by its checks gets no requests"
    );
    b.healthy.store(true, Ordering::SeqCst);
    wait_state(gw.addr, &b.url(), 0.0).await;
    for _ in 0..6 {
        assert_eq!(call(gw.addr, "x").await.status, StatusCode::OK);
    }
    assert_eq!(b.posts(), before + 3, "back in the rotation");
}

#[tokio::test]
async fn weights_share_the_requests() {
    let heavy = Counting::start().await;
    let light = Counting::start().await;
    let gw = TestServer::start(&gateway(
        &format!(
            "{{ url = \"{}\", weight = 3 }}, \"{}\"",
            heavy.url(),
            light.url()
        ),
        "",
    ))
    .await;
    for _ in 0..12 {
        assert_eq!(call(gw.addr, "x").await.status, StatusCode::OK);
    }
    assert_eq!((heavy.posts(), light.posts()), (9, 3));
}

#[tokio::test]
async fn least_outstanding_sends_requests_past_a_busy_backend() {
    let a = Counting::start().await;
    let b = Counting::start().await;
    let gw = TestServer::start(&gateway(
        &format!("\"{}\", \"{}\"", a.url(), b.url()),
        "balance = \"least-outstanding\"\n",
    ))
    .await;
    let addr = gw.addr;
    let slow = tokio::spawn(async move { call(addr, "slow").await });
    while a.posts() + b.posts() == 0 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let (busy, idle) = if a.posts() == 1 { (&a, &b) } else { (&b, &a) };
    for _ in 0..6 {
        assert_eq!(call(gw.addr, "x").await.status, StatusCode::OK);
    }
    assert_eq!(busy.posts(), 1, "nothing more went to the busy backend");
    assert_eq!(idle.posts(), 6);
    assert_eq!(slow.await.unwrap().status, StatusCode::OK);
}

#[tokio::test]
async fn a_gateway_whose_every_backend_is_ejected_is_not_ready() {
    let closed = closed_port().await;
    let gw = TestServer::start(&gateway(
        &format!("\"http://{closed}/ws\""),
        "eject_after_failures = 1\neject_ms = 60000\n",
    ))
    .await;
    let ready = get(gw.addr, "/ready").await;
    assert_eq!(ready.status, StatusCode::OK, "{}", ready.text());
    call(gw.addr, "x")
        .await
        .assert_fault(FaultKind::UpstreamUnavailable, SoapVersion::V12);
    let ready = get(gw.addr, "/ready").await;
    assert_eq!(ready.status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(
        ready.text().contains("every backend ejected or down"),
        "{}",
        ready.text()
    );
}
