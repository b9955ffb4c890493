//! One timed call: the client's points, and the server's spans from `Server-Timing`.

use super::TimingArgs;
use crate::error::BenchError;
use crate::http::target::TargetUrl;
use bytes::Bytes;
use http::{HeaderValue, Method, Request};
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use lather_envelope::{Envelope, Limits};
use std::time::Instant;

/// The client's points of one call (nanoseconds after point 1) and the server's spans
/// (nanoseconds, by name, as its `Server-Timing` gave them).
#[derive(Debug, Clone, Default)]
pub struct Sample {
    /// Points 2, 3, 4, 13, 14, 15 and 16, after point 1.
    pub client: [u64; 7],
    /// The server's spans, in the order given (`total` included), if it sent any.
    pub server: Vec<(String, u64)>,
}

impl Sample {
    /// The span the server named `name`, in nanoseconds.
    pub fn server_span(&self, name: &str) -> Option<u64> {
        self.server.iter().find(|(n, _)| n == name).map(|(_, v)| *v)
    }
}

/// `args.warmup` calls, then `args.requests` timed calls to `target` on one connection.
pub(super) async fn collect(
    target: &TargetUrl,
    args: &TimingArgs,
) -> Result<Vec<Sample>, BenchError> {
    let fail = |reason: String| BenchError::Experiment(format!("{}: {reason}", target.authority));
    let addr = target.resolve().await?;
    let stream = tokio::net::TcpStream::connect(addr)
        .await
        .map_err(|e| fail(format!("cannot connect: {e}")))?;
    stream.set_nodelay(true).ok();
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| fail(format!("HTTP handshake failed: {e}")))?;
    tokio::spawn(connection);
    let mut samples = Vec::with_capacity(args.requests);
    for i in 0..args.warmup + args.requests {
        let sample = call(&mut sender, target, args)
            .await
            .map_err(|reason| fail(format!("call {}: {reason}", i + 1)))?;
        if i >= args.warmup {
            samples.push(sample);
        }
    }
    Ok(samples)
}

/// One call, with its points marked.
async fn call(
    sender: &mut hyper::client::conn::http1::SendRequest<Full<Bytes>>,
    target: &TargetUrl,
    args: &TimingArgs,
) -> Result<Sample, String> {
    let p1 = Instant::now();
    let p2 = Instant::now();
    let body = crate::request::soap_echo_body(args.soap, args.payload_bytes);
    let mut request = Request::new(Full::new(body));
    *request.method_mut() = Method::POST;
    *request.uri_mut() = target.path.clone();
    let headers = request.headers_mut();
    *headers =
        crate::request::echo_headers(args.soap, &target.authority).map_err(|e| e.to_string())?;
    headers.insert("lather-timing", HeaderValue::from_static("1"));
    let p3 = Instant::now();
    sender.ready().await.map_err(|e| e.to_string())?;
    let p4 = Instant::now();
    let response = sender
        .send_request(request)
        .await
        .map_err(|e| e.to_string())?;
    let (parts, incoming) = response.into_parts();
    let raw = incoming
        .collect()
        .await
        .map_err(|e| e.to_string())?
        .to_bytes();
    let p13 = Instant::now();
    if !parts.status.is_success() {
        return Err(format!("answered {}", parts.status));
    }
    let p14 = Instant::now();
    let envelope = Envelope::parse(raw, &Limits::default()).map_err(|f| f.to_string())?;
    let p15 = Instant::now();
    if envelope.is_fault() {
        return Err("answered with a fault".into());
    }
    let server = parts
        .headers
        .get("server-timing")
        .and_then(|v| v.to_str().ok())
        .map(parse_server_timing)
        .unwrap_or_default();
    let p16 = Instant::now();
    let after = |p: Instant| u64::try_from((p - p1).as_nanos()).unwrap_or(u64::MAX);
    Ok(Sample {
        client: [p2, p3, p4, p13, p14, p15, p16].map(after),
        server,
    })
}

/// `name;dur=MS, …` (W3C Server Timing) as (name, nanoseconds); entries without a
/// duration are left out.
pub(super) fn parse_server_timing(value: &str) -> Vec<(String, u64)> {
    value
        .split(',')
        .filter_map(|entry| {
            let mut params = entry.split(';').map(str::trim);
            let name = params.next()?.to_owned();
            let ms: f64 = params
                .find_map(|p| p.strip_prefix("dur="))?
                .trim_matches('"')
                .parse()
                .ok()?;
            (ms.is_finite() && ms >= 0.0).then_some((name, (ms * 1e6) as u64))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_timing_entries_are_read_in_nanoseconds() {
        let parsed = parse_server_timing(
            "decode;dur=0.012, cache;desc=\"hit\", call;dur=1.5, total;dur=\"2\"",
        );
        assert_eq!(
            parsed,
            [
                ("decode".to_owned(), 12_000),
                ("call".to_owned(), 1_500_000),
                ("total".to_owned(), 2_000_000)
            ]
        );
        assert!(parse_server_timing("x;dur=-1, y;dur=abc").is_empty());
    }
}
