//! The relay itself: each request forwarded to the server as it came (its path, its
//! headers but the hop-by-hop ones, its body byte for byte), the answer passed back, one
//! line printed per exchange and, with `--record`, one line written.

use super::record::Exchange;
use super::{RelayArgs, RelayClient, Target, base_target, pretty, relayed};
use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use lather_envelope::{Envelope, Limits};
use std::io::Write as _;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::net::TcpListener;

struct Relay {
    to: Target,
    client: RelayClient,
    record: Option<Mutex<std::fs::File>>,
    print: bool,
    max_body_bytes: usize,
    timeout: Duration,
}

/// Listens on `listen` and relays to `to` until SIGINT or SIGTERM.
pub(super) async fn run(listen: SocketAddr, to: &str, args: &RelayArgs) -> anyhow::Result<()> {
    let target = base_target(to)?;
    let client = super::client(args)?;
    let record = match &args.record {
        Some(path) => Some(Mutex::new(std::fs::File::create(path).map_err(|e| {
            anyhow::anyhow!("cannot write the recording {}: {e}", path.display())
        })?)),
        None => None,
    };
    let listener = TcpListener::bind(listen)
        .await
        .map_err(|e| anyhow::anyhow!("cannot listen on {listen}: {e}"))?;
    eprintln!("relaying {} to {target}", listener.local_addr()?);
    let relay = Arc::new(Relay {
        to: target,
        client,
        record,
        print: args.print,
        max_body_bytes: args.max_body_bytes,
        timeout: Duration::from_millis(args.timeout_ms),
    });
    let mut stop = std::pin::pin!(crate::serve::shutdown_signal());
    loop {
        let (stream, _) = tokio::select! {
            accepted = listener.accept() => accepted?,
            () = &mut stop => return Ok(()),
        };
        let relay = relay.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |req| {
                let relay = relay.clone();
                async move { Ok::<_, std::convert::Infallible>(relay.exchange(req).await) }
            });
            let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

impl Relay {
    async fn exchange(&self, req: Request<Incoming>) -> Response<Full<Bytes>> {
        let started = Instant::now();
        let (parts, body) = req.into_parts();
        let body = match Limited::new(body, self.max_body_bytes).collect().await {
            Ok(collected) => collected.to_bytes(),
            Err(e) => return plain(StatusCode::PAYLOAD_TOO_LARGE, &format!("relay: {e}\n")),
        };
        let path = parts
            .uri
            .path_and_query()
            .map_or("/", |p| p.as_str())
            .to_owned();
        let mut forward = Request::new(Full::new(body.clone()));
        *forward.method_mut() = parts.method.clone();
        *forward.uri_mut() = match self.to.url(&path) {
            Ok(uri) => uri,
            Err(_) => return plain(StatusCode::BAD_REQUEST, "relay: a path it cannot forward\n"),
        };
        for (name, value) in parts.headers.iter().filter(|(n, _)| relayed(n.as_str())) {
            forward.headers_mut().append(name.clone(), value.clone());
        }
        // The headers as recorded: those forwarded, read only when recording.
        let headers: Vec<(String, String)> = if self.record.is_some() {
            forward
                .headers()
                .iter()
                .filter_map(|(name, value)| {
                    Some((name.to_string(), value.to_str().ok()?.to_owned()))
                })
                .collect()
        } else {
            Vec::new()
        };
        let answer = tokio::time::timeout(self.timeout, async {
            let response = self.client.request(forward).await?;
            let (parts, body) = response.into_parts();
            let body = Limited::new(body, self.max_body_bytes)
                .collect()
                .await
                .map_err(|e| anyhow::anyhow!("{e}"))?
                .to_bytes();
            anyhow::Ok((parts, body))
        })
        .await;
        let (status, response) = match answer {
            Ok(Ok((parts, body))) => {
                let mut response = Response::new(Full::new(body.clone()));
                *response.status_mut() = parts.status;
                for (name, value) in parts.headers.iter().filter(|(n, _)| relayed(n.as_str())) {
                    response.headers_mut().append(name.clone(), value.clone());
                }
                (parts.status.as_u16(), (response, body))
            }
            Ok(Err(e)) => {
                let text = format!("relay: the server failed: {e}\n");
                (
                    502,
                    (plain(StatusCode::BAD_GATEWAY, &text), Bytes::from(text)),
                )
            }
            Err(_) => {
                let text = "relay: the server did not answer in time\n".to_owned();
                (
                    504,
                    (plain(StatusCode::GATEWAY_TIMEOUT, &text), Bytes::from(text)),
                )
            }
        };
        let (response, answer_body) = response;
        let micros = started.elapsed().as_micros() as u64;
        self.show(&parts.method, &path, &body, status, &answer_body, micros);
        if let Some(record) = &self.record {
            let exchange = Exchange {
                method: parts.method.to_string(),
                path,
                headers,
                body: Exchange::encode_body(&body),
                status,
                response_bytes: answer_body.len(),
                micros,
            };
            if let Ok(line) = serde_json::to_string(&exchange) {
                let mut file = record
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                if let Err(e) = writeln!(file, "{line}") {
                    eprintln!("relay: the recording could not be written: {e}");
                }
            }
        }
        response
    }

    /// One line per exchange, and the envelopes indented with `--print`.
    fn show(
        &self,
        method: &http::Method,
        path: &str,
        request: &Bytes,
        status: u16,
        answer: &Bytes,
        micros: u64,
    ) {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(
            out,
            "{method} {path} {} {} B -> {status} {} B {:.2} ms",
            operation(request),
            request.len(),
            answer.len(),
            micros as f64 / 1000.0
        );
        if self.print {
            for (label, body) in [("request", request), ("answer", answer)] {
                if !body.is_empty() {
                    let _ = writeln!(out, "--- {label}\n{}", pretty::indent(body));
                }
            }
        }
    }
}

/// The operation a SOAP request names (`{namespace}local` of the Body's first child), or
/// `-` for anything else.
fn operation(body: &Bytes) -> String {
    Envelope::parse(body.clone(), &Limits::default())
        .ok()
        .and_then(|e| {
            e.operation()
                .map(|op| format!("{{{}}}{}", op.namespace(), op.local()))
        })
        .unwrap_or_else(|| "-".to_owned())
}

fn plain(status: StatusCode, text: &str) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(text.to_owned())));
    *response.status_mut() = status;
    response
}
