//! Active health checks: each backend of a gateway is sent the configured request every
//! `interval`; failures in a row take it out of rotation, passes in a row bring it back.

use super::backends::Backends;
use super::upstream_client::UpstreamClient;
use bytes::Bytes;
use http::{Method, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use lather_config::{HealthCheck, Probe, UpstreamProtocol};
use std::sync::Weak;

/// Most bytes of a check's answer read (the rest is not needed to judge it).
const MAX_CHECK_ANSWER: usize = 64 * 1024;

/// Starts checking the backends of `backends` by `check` until they are dropped. Must be
/// called within a tokio runtime.
pub(crate) fn start(
    service: String,
    backends: Weak<Backends>,
    check: HealthCheck,
    tls: super::UpstreamTls,
) {
    tokio::spawn(run(service, backends, check, tls));
}

async fn run(
    service: String,
    backends: Weak<Backends>,
    check: HealthCheck,
    tls: super::UpstreamTls,
) {
    // Checks use connections of their own, so a busy pool does not fail them.
    let client = UpstreamClient::new(UpstreamProtocol::Http1, 1, check.timeout, tls);
    let mut tick = tokio::time::interval(check.interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let Some(live) = backends.upgrade() else {
            return;
        };
        let list = live.snapshot();
        drop(live);
        let checks = list.iter().map(|backend| {
            let client = &client;
            let check = &check;
            let service = &service;
            async move {
                let passed = probe(client, &backend.upstream.uri, check).await;
                if let Err(why) = &passed {
                    tracing::debug!(service, upstream = %backend.upstream.url, why, "health check failed");
                }
                backend.checked(passed.is_ok(), check.unhealthy_after, check.healthy_after);
            }
        });
        futures_util::future::join_all(checks).await;
    }
}

/// Sends the check to `uri`: passed, or why not.
async fn probe(
    client: &UpstreamClient,
    uri: &http::Uri,
    check: &HealthCheck,
) -> Result<(), String> {
    let request = match &check.probe {
        Probe::Wsdl => Request::builder()
            .method(Method::GET)
            .uri(super::with_query(uri, "wsdl"))
            .body(Full::new(Bytes::new())),
        Probe::Soap { body, action } => {
            let mut builder = Request::builder()
                .method(Method::POST)
                .uri(uri.clone())
                .header(http::header::CONTENT_TYPE, "text/xml; charset=utf-8");
            if let Some(action) = action {
                builder = builder.header("soapaction", format!("\"{action}\""));
            }
            builder.body(Full::new(Bytes::from(body.clone())))
        }
    }
    .map_err(|e| format!("bad check request: {e}"))?;
    let answer = tokio::time::timeout(check.timeout, async {
        let response = client
            .send(request)
            .await
            .map_err(|e| format!("no answer: {e}"))?;
        let status = response.status();
        // Read (a bounded part of) the answer so the connection can be used again.
        let _ = http_body_util::Limited::new(response.into_body(), MAX_CHECK_ANSWER)
            .collect()
            .await;
        Ok::<StatusCode, String>(status)
    })
    .await
    .map_err(|_| format!("no answer within {} ms", check.timeout.as_millis()))??;
    let passed = match check.probe {
        Probe::Wsdl => answer == StatusCode::OK,
        Probe::Soap { .. } => answer.is_success(),
    };
    if passed {
        Ok(())
    } else {
        Err(format!("answered {answer}"))
    }
}
