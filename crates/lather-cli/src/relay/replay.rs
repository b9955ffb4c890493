//! `lather relay --replay FILE URL`: the recorded requests sent again, in order, each
//! exactly as recorded (method, path, headers, body), one line printed per request and a
//! summary of the statuses against the recorded ones.

use super::record::{self, Exchange};
use super::{RelayArgs, RelayClient, Target, base_target};
use http::Request;
use http_body_util::{BodyExt, Full, Limited};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

/// Replays `file` against `url`; an error when a request could not be sent at all.
pub(super) async fn run(file: &Path, url: &str, args: &RelayArgs) -> anyhow::Result<()> {
    let target = base_target(url)?;
    let text = std::fs::read_to_string(file)
        .map_err(|e| anyhow::anyhow!("cannot read the recording {}: {e}", file.display()))?;
    let exchanges = record::read(&text)?;
    let client = super::client(args)?;
    let timeout = Duration::from_millis(args.timeout_ms);
    let mut statuses: BTreeMap<u16, usize> = BTreeMap::new();
    let mut changed = 0usize;
    for (i, exchange) in exchanges.iter().enumerate() {
        let started = Instant::now();
        let status = send(&client, &target, exchange, timeout, args.max_body_bytes)
            .await
            .map_err(|e| {
                anyhow::anyhow!(
                    "request {} ({} {}): {e}",
                    i + 1,
                    exchange.method,
                    exchange.path
                )
            })?;
        *statuses.entry(status).or_default() += 1;
        let note = if status == exchange.status {
            ""
        } else {
            changed += 1;
            " (recorded: other status)"
        };
        println!(
            "{} {} -> {status}{note} {:.2} ms",
            exchange.method,
            exchange.path,
            started.elapsed().as_secs_f64() * 1000.0
        );
    }
    let summary: Vec<String> = statuses.iter().map(|(s, n)| format!("{n} × {s}")).collect();
    println!(
        "replayed {} requests: {}; {changed} answered with another status than recorded",
        exchanges.len(),
        summary.join(", ")
    );
    Ok(())
}

async fn send(
    client: &RelayClient,
    target: &Target,
    exchange: &Exchange,
    timeout: Duration,
    max_body_bytes: usize,
) -> anyhow::Result<u16> {
    let mut request = Request::new(Full::new(exchange.body_bytes()?));
    *request.method_mut() = exchange.method.parse()?;
    *request.uri_mut() = target.url(&exchange.path)?;
    for (name, value) in &exchange.headers {
        request.headers_mut().append(
            http::HeaderName::from_bytes(name.as_bytes())?,
            http::HeaderValue::from_str(value)?,
        );
    }
    tokio::time::timeout(timeout, async {
        let response = client.request(request).await?;
        let status = response.status().as_u16();
        // Read (and bound) the answer so the connection can be used again.
        let _ = Limited::new(response.into_body(), max_body_bytes)
            .collect()
            .await;
        anyhow::Ok(status)
    })
    .await
    .map_err(|_| anyhow::anyhow!("no answer within {} ms", timeout.as_millis()))?
}
