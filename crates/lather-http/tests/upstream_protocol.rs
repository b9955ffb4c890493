//! A gateway's connections to its upstreams: with `upstream_protocol = "h2c"` many
//! requests share at most `upstream_connections` HTTP/2 connections; with HTTP/1.1 the
//! budget bounds the connections (and so the requests at once), the others wait their turn.

use crate::support;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use lather_envelope::SoapVersion;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use support::*;
use tokio::net::TcpListener;

/// What the backend saw: connections accepted, requests by HTTP/2, most requests at once.
#[derive(Default)]
struct Seen {
    connections: AtomicU64,
    http2: AtomicU64,
    now: AtomicU64,
    most: AtomicU64,
}

/// A backend speaking HTTP/1.1 and h2c, answering each request after `delay`.
async fn backend(delay: Duration) -> (SocketAddr, Arc<Seen>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Arc::new(Seen::default());
    let s = seen.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            s.connections.fetch_add(1, Ordering::SeqCst);
            let s = s.clone();
            tokio::spawn(async move {
                let svc =
                    hyper::service::service_fn(move |req: http::Request<hyper::body::Incoming>| {
                        let s = s.clone();
                        async move {
                            if req.version() == http::Version::HTTP_2 {
                                s.http2.fetch_add(1, Ordering::SeqCst);
                            }
                            let now = s.now.fetch_add(1, Ordering::SeqCst) + 1;
                            s.most.fetch_max(now, Ordering::SeqCst);
                            let _ = req.into_body().collect().await;
                            tokio::time::sleep(delay).await;
                            s.now.fetch_sub(1, Ordering::SeqCst);
                            let answer = envelope(SoapVersion::V12, "", "<ok/>");
                            let mut r = http::Response::new(Full::new(Bytes::from(answer)));
                            r.headers_mut().insert(
                                "content-type",
                                "application/soap+xml; charset=utf-8".parse().unwrap(),
                            );
                            Ok::<_, std::convert::Infallible>(r)
                        }
                    });
                let _ = hyper_util::server::conn::auto::Builder::new(
                    hyper_util::rt::TokioExecutor::new(),
                )
                .serve_connection(hyper_util::rt::TokioIo::new(stream), svc)
                .await;
            });
        }
    });
    (addr, seen)
}

async fn burst(server: &TestServer, n: usize) {
    let calls: Vec<_> = (0..n)
        .map(|_| {
            let addr = server.addr;
            tokio::spawn(async move {
                post(
                    addr,
                    "/g",
                    SoapVersion::V12,
                    envelope(SoapVersion::V12, "", "<m:x xmlns:m=\"urn:m\"/>"),
                )
                .await
            })
        })
        .collect();
    for call in calls {
        let answer = call.await.unwrap();
        assert_eq!(answer.status, 200, "{}", answer.text());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn h2c_carries_many_requests_on_the_budgeted_connections() {
    let (upstream, seen) = backend(Duration::from_millis(20)).await;
    let server = TestServer::start(&format!(
        "[[service]]\nname = \"g\"\npath = \"/g\"\nupstream = [\"http://{upstream}/ws\"]\n\
         upstream_protocol = \"h2c\"\nupstream_connections = 2\n"
    ))
    .await;
    burst(&server, 40).await;
    assert_eq!(
        seen.http2.load(Ordering::SeqCst),
        40,
        "not every request came by HTTP/2"
    );
    let connections = seen.connections.load(Ordering::SeqCst);
    assert!((1..=2).contains(&connections), "{connections} connections");
    assert!(
        seen.most.load(Ordering::SeqCst) > 2,
        "requests were not multiplexed"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http1_requests_beyond_the_budget_wait_for_a_connection() {
    let (upstream, seen) = backend(Duration::from_millis(30)).await;
    let server = TestServer::start(&format!(
        "[[service]]\nname = \"g\"\npath = \"/g\"\nupstream = [\"http://{upstream}/ws\"]\n\
         upstream_connections = 3\n"
    ))
    .await;
    burst(&server, 20).await;
    assert_eq!(seen.http2.load(Ordering::SeqCst), 0);
    assert!(
        seen.most.load(Ordering::SeqCst) <= 3,
        "the budget was exceeded"
    );
    assert!(seen.connections.load(Ordering::SeqCst) <= 3);
}
