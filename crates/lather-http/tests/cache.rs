//! The `cache` handler in a gateway: a repeated request is answered without reaching the
//! backend; faults and non-200 answers never are; entries expire; `Cache-Control`
//! is honoured; a write operation empties the cache; `/metrics` counts it all. The
//! gateway's WSDL is fetched from the backend once per `wsdl_cache_ms`.

use crate::support;

use bytes::Bytes;
use http::StatusCode;
use http_body_util::Full;
use lather_envelope::SoapVersion;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use support::*;
use tokio::net::TcpListener;

/// A backend numbering its answers: `<n>K</n>` for the K-th request it saw. A Body with
/// `fail` gets a SOAP fault (500), one with `busy` a 503 SOAP answer; `GET ?wsdl` a WSDL.
async fn counting_backend() -> (SocketAddr, Arc<AtomicU64>, Arc<AtomicU64>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let posts = Arc::new(AtomicU64::new(0));
    let gets = Arc::new(AtomicU64::new(0));
    let (p, g) = (posts.clone(), gets.clone());
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let (posts, gets) = (p.clone(), g.clone());
            tokio::spawn(async move {
                let svc = hyper::service::service_fn(
                    move |req: http::Request<hyper::body::Incoming>| {
                        let (posts, gets) = (posts.clone(), gets.clone());
                        async move {
                            use http_body_util::BodyExt;
                            let wsdl = req.method() == http::Method::GET;
                            let body = req.into_body().collect().await.unwrap().to_bytes();
                            let text = String::from_utf8_lossy(&body).into_owned();
                            let (status, answer) = if wsdl {
                                let n = gets.fetch_add(1, Ordering::SeqCst) + 1;
                                (
                                    200,
                                    format!(
                                        r#"<definitions n="{n}"><service><port><soap:address xmlns:soap="urn:s" location="http://backend/ws"/></port></service></definitions>"#
                                    ),
                                )
                            } else {
                                let n = posts.fetch_add(1, Ordering::SeqCst) + 1;
                                if text.contains("fail") {
                                    (
                                        500,
                                        envelope(
                                            SoapVersion::V12,
                                            "",
                                            &format!(
                                                r#"<s:Fault><s:Code><s:Value>s:Receiver</s:Value></s:Code><s:Reason><s:Text xml:lang="en">failed {n}</s:Text></s:Reason></s:Fault>"#
                                            ),
                                        ),
                                    )
                                } else {
                                    let status = if text.contains("busy") { 503 } else { 200 };
                                    (
                                        status,
                                        envelope(
                                            SoapVersion::V12,
                                            "",
                                            &format!(
                                                r#"<r:answer xmlns:r="urn:shop"><n>{n}</n></r:answer>"#
                                            ),
                                        ),
                                    )
                                }
                            };
                            let mut r = http::Response::new(Full::new(Bytes::from(answer)));
                            *r.status_mut() = StatusCode::from_u16(status).unwrap();
                            r.headers_mut().insert(
                                "content-type",
                                "application/soap+xml; charset=utf-8".parse().unwrap(),
                            );
                            Ok::<_, std::convert::Infallible>(r)
                        }
                    },
                );
                let _ = hyper_util::server::conn::auto::Builder::new(
                    hyper_util::rt::TokioExecutor::new(),
                )
                .serve_connection(hyper_util::rt::TokioIo::new(stream), svc)
                .await;
            });
        }
    });
    (addr, posts, gets)
}

async fn gateway(backend: SocketAddr, cache_keys: &str) -> TestServer {
    TestServer::start(&format!(
        "[handlers.cache]\nkind = \"cache\"\n{cache_keys}\n\
         [[service]]\nname = \"shop\"\npath = \"/shop\"\nupstream = [\"http://{backend}/ws\"]\n\
         wsdl_cache_ms = 60000\n\
         request = [[\"cache\"]]\nresponse = [[\"cache\"]]\n"
    ))
    .await
}

async fn call(server: &TestServer, operation: &str, arg: &str, headers: &[(&str, &str)]) -> Answer {
    let payload = format!(r#"<m:{operation} xmlns:m="urn:shop"><arg>{arg}</arg></m:{operation}>"#);
    let mut req = soap_request(
        server.addr,
        "/shop",
        SoapVersion::V12,
        envelope(SoapVersion::V12, "", &payload),
    );
    for (name, value) in headers {
        req.headers_mut().insert(
            http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
            value.parse().unwrap(),
        );
    }
    send(server.addr, req).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repeated_request_never_reaches_the_backend_and_metrics_count_it() {
    let (backend, posts, _) = counting_backend().await;
    let server = gateway(backend, "operations = [\"GetPrice\"]\n").await;
    let first = call(&server, "GetPrice", "apple", &[]).await;
    assert_eq!(first.status, 200, "{}", first.text());
    assert_eq!(field(&first, "n"), "1");
    for _ in 0..3 {
        let again = call(&server, "GetPrice", "apple", &[]).await;
        assert_eq!(again.status, 200);
        assert_eq!(field(&again, "n"), "1", "not the cached answer");
    }
    assert_eq!(
        posts.load(Ordering::SeqCst),
        1,
        "a cached request reached the backend"
    );
    assert_eq!(
        field(&call(&server, "GetPrice", "pear", &[]).await, "n"),
        "2"
    );
    assert_eq!(
        field(&call(&server, "GetStock", "apple", &[]).await, "n"),
        "3"
    );
    assert_eq!(
        field(&call(&server, "GetStock", "apple", &[]).await, "n"),
        "4"
    );
    let metrics = get(server.addr, "/metrics").await;
    let text = metrics.text();
    let value = |name: &str| {
        metric(
            text,
            &format!("lather_{name}{{service=\"shop\",handler=\"cache\"}}"),
        )
        .unwrap_or_else(|| panic!("no {name} in {text}"))
    };
    assert_eq!(value("cache_hits_total"), 3.0);
    assert_eq!(value("cache_misses_total"), 2.0);
    assert_eq!(value("cache_entries"), 2.0);
    assert!(value("cache_bytes") > 0.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn faults_non_200_answers_and_expired_entries_are_never_served() {
    let (backend, posts, _) = counting_backend().await;
    let server = gateway(backend, "operations = [\"*\"]\nttl_ms = 300\n").await;
    for n in 1..=2 {
        let fault = call(&server, "GetPrice", "fail", &[]).await;
        assert_eq!(fault.status, 500);
        assert!(
            fault.text().contains(&format!("failed {n}")),
            "{}",
            fault.text()
        );
    }
    for n in 3..=4 {
        let busy = call(&server, "GetPrice", "busy", &[]).await;
        assert_eq!(busy.status, 503);
        assert_eq!(field(&busy, "n"), n.to_string());
    }
    assert_eq!(field(&call(&server, "GetPrice", "ok", &[]).await, "n"), "5");
    assert_eq!(field(&call(&server, "GetPrice", "ok", &[]).await, "n"), "5");
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(
        field(&call(&server, "GetPrice", "ok", &[]).await, "n"),
        "6",
        "an entry was served past its TTL"
    );
    assert_eq!(posts.load(Ordering::SeqCst), 6);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cache_control_and_a_write_operation_are_honoured() {
    let (backend, _, _) = counting_backend().await;
    let server = gateway(
        backend,
        "operations = [\"*\"]\nnever = [\"GetQuote\"]\ninvalidate_on = [\"SetPrice\"]\n",
    )
    .await;
    assert_eq!(field(&call(&server, "GetPrice", "a", &[]).await, "n"), "1");
    let fresh = call(&server, "GetPrice", "a", &[("cache-control", "no-cache")]).await;
    assert_eq!(
        field(&fresh, "n"),
        "2",
        "no-cache was answered from the cache"
    );
    // The fresh answer replaced the stored one.
    assert_eq!(field(&call(&server, "GetPrice", "a", &[]).await, "n"), "2");
    let unstored = call(&server, "GetPrice", "b", &[("cache-control", "no-store")]).await;
    assert_eq!(field(&unstored, "n"), "3");
    assert_eq!(field(&call(&server, "GetPrice", "b", &[]).await, "n"), "4");
    assert_eq!(field(&call(&server, "GetQuote", "a", &[]).await, "n"), "5");
    assert_eq!(field(&call(&server, "GetQuote", "a", &[]).await, "n"), "6");
    assert_eq!(field(&call(&server, "SetPrice", "a", &[]).await, "n"), "7");
    assert_eq!(
        field(&call(&server, "GetPrice", "a", &[]).await, "n"),
        "8",
        "an entry outlived a write operation"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gateway_fetches_the_backend_wsdl_once_per_wsdl_cache_ms() {
    let (backend, _, gets) = counting_backend().await;
    let server = gateway(backend, "operations = [\"*\"]\n").await;
    for _ in 0..3 {
        let wsdl = get(server.addr, "/shop?wsdl").await;
        assert_eq!(wsdl.status, 200);
        assert!(wsdl.text().contains(r#"n="1""#), "{}", wsdl.text());
        assert!(
            wsdl.text()
                .contains(&format!("location=\"http://{}/shop\"", server.addr)),
            "{}",
            wsdl.text()
        );
    }
    assert_eq!(gets.load(Ordering::SeqCst), 1);
    let uncached = TestServer::start(&format!(
        "[[service]]\nname = \"shop\"\npath = \"/shop\"\nupstream = [\"http://{backend}/ws\"]\nwsdl_cache_ms = 0\n"
    ))
    .await;
    for _ in 0..2 {
        assert_eq!(get(uncached.addr, "/shop?wsdl").await.status, 200);
    }
    assert_eq!(
        gets.load(Ordering::SeqCst),
        3,
        "wsdl_cache_ms = 0 still cached"
    );
}
