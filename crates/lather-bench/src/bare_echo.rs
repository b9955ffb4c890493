//! A bare hyper HTTP/1.1 server (`lather-bench bare-echo`): it answers every request with
//! its body, on one current-thread runtime per thread with connections dealt to them in
//! turn (as lather's per-core threading does), and does nothing else — no SOAP, no limits,
//! no metrics. `bench/efficiency.sh` measures it beside lather's echo as the floor under
//! any hyper-based server on the same machine: what lather's echo spends above it is
//! lather's own.

use crate::BenchError;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use std::convert::Infallible;
use tokio::sync::mpsc;

/// Arguments of `lather-bench bare-echo`.
#[derive(Debug, Clone, clap::Args)]
pub struct BareEchoArgs {
    /// Where to listen, e.g. `127.0.0.1:18080` (port 0: one the system picks; the address
    /// listened on is printed as `listening on ADDR`)
    #[arg(long, value_name = "ADDR")]
    pub listen: String,
    /// Threads serving connections, each with a current-thread runtime of its own
    #[arg(long, default_value_t = 2)]
    pub threads: usize,
}

/// Serves until the process is stopped.
pub fn run(args: &BareEchoArgs) -> Result<(), BenchError> {
    let failed = |what: &str, e: std::io::Error| BenchError::Experiment(format!("{what}: {e}"));
    let listener =
        std::net::TcpListener::bind(&args.listen).map_err(|e| failed(&args.listen, e))?;
    listener
        .set_nonblocking(true)
        .map_err(|e| failed("the listener", e))?;
    let bound = listener
        .local_addr()
        .map_err(|e| failed("the listener", e))?;
    println!("listening on {bound}");
    let mut lanes = Vec::new();
    for _ in 0..args.threads.max(1) {
        let (lane, connections) = mpsc::unbounded_channel::<std::net::TcpStream>();
        lanes.push(lane);
        let runtime = current_thread()?;
        std::thread::spawn(move || runtime.block_on(serve(connections)));
    }
    current_thread()?.block_on(async move {
        let listener =
            tokio::net::TcpListener::from_std(listener).map_err(|e| failed("the listener", e))?;
        for turn in (0..lanes.len()).cycle() {
            let (stream, _) = listener.accept().await.map_err(|e| failed("accept", e))?;
            let stream = stream.into_std().map_err(|e| failed("accept", e))?;
            if lanes[turn].send(stream).is_err() {
                return Err(BenchError::Experiment("a serving thread stopped".into()));
            }
        }
        Ok(())
    })
}

fn current_thread() -> Result<tokio::runtime::Runtime, BenchError> {
    tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()
        .map_err(|e| BenchError::Experiment(format!("cannot start a runtime: {e}")))
}

/// Serves each connection handed over, in a task of this thread's runtime.
async fn serve(mut connections: mpsc::UnboundedReceiver<std::net::TcpStream>) {
    while let Some(stream) = connections.recv().await {
        let Ok(stream) = tokio::net::TcpStream::from_std(stream) else {
            continue;
        };
        let _ = stream.set_nodelay(true);
        tokio::spawn(async move {
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), hyper::service::service_fn(echo))
                .await;
        });
    }
}

/// The request's body, as it came.
async fn echo(request: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    let body = request
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let mut response = Response::new(Full::new(body));
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("text/xml; charset=utf-8"),
    );
    Ok(response)
}
