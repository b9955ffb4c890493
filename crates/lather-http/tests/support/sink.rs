//! Notification sinks for eventing tests: small hyper servers that answer 202 and report
//! every message they receive.

use bytes::Bytes;
use http::Request;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::{TokioExecutor, TokioIo};
use lather_envelope::{Envelope, Limits};
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use tokio::net::TcpListener;
use tokio::sync::mpsc;

/// What a sink received.
#[derive(Debug)]
pub struct Received {
    pub at: Instant,
    pub path: String,
    pub soap_action: Option<String>,
    pub content_type: String,
    /// The `Content-Encoding` header, if any.
    pub content_encoding: Option<String>,
    /// The body as it came (compressed if `content_encoding` says so).
    pub raw: Bytes,
    /// The body as text (lossy for a compressed body).
    pub body: String,
}

impl Received {
    /// The body as text; it must have come uncompressed.
    pub fn plain(&self) -> String {
        assert_eq!(self.content_encoding, None, "expected a plain body");
        self.body.clone()
    }

    pub fn envelope(&self) -> Envelope {
        Envelope::parse(Bytes::from(self.body.clone()), &Limits::default()).unwrap()
    }
}

/// A sink answering 202 after `delay` and reporting every message on the channel.
pub async fn sink(delay: Duration) -> (SocketAddr, mpsc::UnboundedReceiver<Received>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let tx = tx.clone();
            tokio::spawn(async move {
                let svc = hyper::service::service_fn(move |req: Request<hyper::body::Incoming>| {
                    let tx = tx.clone();
                    async move {
                        let at = Instant::now();
                        let header =
                            |n: &str| req.headers().get(n).map(|v| v.to_str().unwrap().to_owned());
                        let soap_action = header("soapaction");
                        let content_type = header("content-type").unwrap_or_default();
                        let content_encoding = header("content-encoding");
                        let path = req.uri().path().to_owned();
                        let raw = req.into_body().collect().await.unwrap().to_bytes();
                        tokio::time::sleep(delay).await;
                        let _ = tx.send(Received {
                            at,
                            path,
                            soap_action,
                            content_type,
                            content_encoding,
                            body: String::from_utf8_lossy(&raw).into_owned(),
                            raw,
                        });
                        let mut r = http::Response::new(Full::new(Bytes::new()));
                        *r.status_mut() = http::StatusCode::ACCEPTED;
                        Ok::<_, std::convert::Infallible>(r)
                    }
                });
                let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(stream), svc)
                    .await;
            });
        }
    });
    (addr, rx)
}

/// The next message a sink received, waiting at most `within`.
pub async fn next(rx: &mut mpsc::UnboundedReceiver<Received>, within: Duration) -> Received {
    tokio::time::timeout(within, rx.recv())
        .await
        .expect("a message in time")
        .expect("sink alive")
}

/// Asserts no message arrives within `within`.
pub async fn nothing(rx: &mut mpsc::UnboundedReceiver<Received>, within: Duration) {
    if let Ok(Some(got)) = tokio::time::timeout(within, rx.recv()).await {
        panic!("unexpected message: {}", got.body);
    }
}
