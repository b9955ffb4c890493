//! `Server::io_threads`: connections are accepted and served on several threads, each with
//! a runtime of its own, sharing one listening socket; every request is answered, and a
//! graceful shutdown drains the requests in flight on every thread before `serve` returns.

use crate::support;

use bytes::Bytes;
use lather_envelope::{EnvelopeBuilder, SoapVersion};
use lather_pipeline::{Reply, ServiceFuture, ServiceRequest, SoapService};
use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use support::*;

/// Answers after `pause`, noting the thread each request ran on.
#[derive(Clone)]
struct Noting {
    threads: Arc<Mutex<Vec<String>>>,
    pause: Duration,
}

impl SoapService for Noting {
    fn call<'a>(&'a self, request: ServiceRequest<'a>) -> ServiceFuture<'a> {
        Box::pin(async move {
            let name = std::thread::current().name().unwrap_or("").to_owned();
            self.threads.lock().unwrap().push(name);
            tokio::time::sleep(self.pause).await;
            let version = request.envelope.version();
            Ok(Reply::Written(
                version,
                EnvelopeBuilder::new(version)
                    .body(Bytes::from_static(b"<r:done xmlns:r=\"urn:r\"/>"))
                    .build(),
            ))
        })
    }
}

#[tokio::test]
async fn connections_are_served_on_every_io_thread_and_drained_at_shutdown() {
    let threads: Arc<Mutex<Vec<String>>> = Arc::default();
    let service = Noting {
        threads: threads.clone(),
        pause: Duration::from_millis(200),
    };
    let server = lather_http::Server::builder()
        .listen("127.0.0.1:0".parse().unwrap())
        .service("/n", service)
        .bind()
        .await
        .unwrap()
        .io_threads(3);
    let addr = server.local_addr();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(server.serve(async {
        let _ = stopped.await;
    }));

    // 48 connections at once, each a request held 200 ms: all answered.
    let body = envelope(SoapVersion::V12, "", "<m:x xmlns:m=\"urn:m\"/>");
    let calls: Vec<_> = (0..48)
        .map(|_| tokio::spawn(post(addr, "/n", SoapVersion::V12, body.clone())))
        .collect();
    for call in calls {
        let answer = call.await.unwrap();
        assert_eq!(answer.status, 200, "{}", answer.text());
    }
    let seen: BTreeSet<String> = threads.lock().unwrap().iter().cloned().collect();
    assert!(
        seen.iter().any(|name| name.starts_with("lather-io-")),
        "no request ran on an I/O thread: {seen:?}"
    );

    // Requests in flight when the shutdown starts are answered, on whichever thread.
    let in_flight: Vec<_> = (0..12)
        .map(|_| tokio::spawn(post(addr, "/n", SoapVersion::V12, body.clone())))
        .collect();
    while threads.lock().unwrap().len() < 48 + 12 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let _ = stop.send(());
    for call in in_flight {
        assert_eq!(call.await.unwrap().status, 200);
    }
    tokio::time::timeout(Duration::from_secs(10), serving)
        .await
        .expect("serve returned")
        .unwrap()
        .unwrap();
    // Nothing accepts any more.
    assert!(tokio::net::TcpStream::connect(addr).await.is_err());
}
