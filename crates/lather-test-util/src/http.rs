//! A loopback HTTP server for tests (HTTP/1.1, and h2c for clients that start with it):
//! every request is handed to one function, whose answer goes back.

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use tokio::net::TcpListener;

/// What a test server answers.
pub type Answer = http::Response<Full<Bytes>>;

/// Serves `handle` on a free loopback port, for as long as the test's runtime runs, and
/// returns its address. Panics if no port can be had.
pub async fn serve<F, Fut>(handle: F) -> SocketAddr
where
    F: Fn(http::Request<Incoming>) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Answer> + Send + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a loopback port for the test server");
    let addr = listener.local_addr().expect("the test server's address");
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let handle = handle.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |request| {
                    let answer = handle(request);
                    async move { Ok::<_, Infallible>(answer.await) }
                });
                let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    addr
}

/// `status` with an empty body.
pub fn empty(status: http::StatusCode) -> Answer {
    let mut answer = http::Response::new(Full::new(Bytes::new()));
    *answer.status_mut() = status;
    answer
}
