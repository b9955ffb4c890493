//! a. Admission slots leak: clients that give up after 50 ms hammer a
//! `max_in_flight = 1` service whose handler sleeps 10 ms; afterwards the
//! service must answer again and its admission gauges must be back to 0.

use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinSet;
use tokio::time::Instant;

use super::{CaseVerdict, Ctx, describe};
use crate::abuse::client::{RawCall, send};
use crate::abuse::probe::echo_request;

/// How long the service gets to recover after the load.
const RECOVERY: Duration = Duration::from_secs(20);

/// The expectation: the service answers 200 and nothing is left admitted
/// or queued.
pub(crate) fn expected(status: Option<u16>, in_flight: Option<f64>, queued: Option<f64>) -> bool {
    status == Some(200) && in_flight == Some(0.0) && queued == Some(0.0)
}

/// Runs the case.
pub(crate) async fn run(ctx: &Ctx) -> CaseVerdict {
    let clients = ctx.pick(100, 500);
    let load_for = Duration::from_secs(ctx.pick(2, 5));
    let body = Arc::new(echo_request("slot"));
    let end = Instant::now() + load_for;
    let mut set = JoinSet::new();
    for _ in 0..clients {
        let (body, addr, path) = (Arc::clone(&body), ctx.addr, ctx.slow.clone());
        set.spawn(async move {
            let (mut ok, mut gave_up) = (0u64, 0u64);
            while Instant::now() < end {
                let call = RawCall::soap12(&path, body.as_bytes(), Duration::from_millis(50));
                match send(addr, &call).await {
                    Ok(a) if a.status == 200 => ok += 1,
                    _ => gave_up += 1,
                }
            }
            (ok, gave_up)
        });
    }
    let (mut ok, mut gave_up) = (0, 0);
    while let Some(Ok((o, g))) = set.join_next().await {
        ok += o;
        gave_up += g;
    }

    let body = echo_request("after");
    let deadline = Instant::now() + RECOVERY;
    loop {
        let answer = send(
            ctx.addr,
            &RawCall::soap12(&ctx.slow, body.as_bytes(), Duration::from_secs(10)),
        )
        .await;
        let status = answer.as_ref().ok().map(|a| a.status);
        let metrics = send(ctx.addr, &RawCall::get("/metrics", Duration::from_secs(10)))
            .await
            .map(|a| a.body)
            .unwrap_or_default();
        let in_flight = gauge(&metrics, "lather_admission_in_flight", &ctx.slow_service);
        let queued = gauge(&metrics, "lather_admission_queued", &ctx.slow_service);
        let last = format!(
            "after: {}, in flight {in_flight:?}, queued {queued:?}",
            describe(&answer)
        );
        if expected(status, in_flight, queued) || Instant::now() >= deadline {
            let met = expected(status, in_flight, queued);
            return CaseVerdict::new(
                met,
                format!("{clients} clients: {ok} ok, {gave_up} given up; {last}"),
            );
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// The value of `name{service="service"}` in a Prometheus text exposition.
pub(crate) fn gauge(metrics: &str, name: &str, service: &str) -> Option<f64> {
    let key = format!("{name}{{service=\"{service}\"}}");
    metrics.lines().find_map(|line| {
        line.strip_prefix(&key)
            .and_then(|rest| rest.trim().parse().ok())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gauges_are_read_by_service() {
        let m = "# TYPE x gauge\nlather_admission_in_flight{service=\"echo\"} 3\nlather_admission_in_flight{service=\"slow\"} 0\n";
        assert_eq!(gauge(m, "lather_admission_in_flight", "slow"), Some(0.0));
        assert_eq!(gauge(m, "lather_admission_in_flight", "echo"), Some(3.0));
        assert_eq!(gauge(m, "lather_admission_queued", "slow"), None);
        assert!(expected(Some(200), Some(0.0), Some(0.0)));
        assert!(!expected(Some(503), Some(0.0), Some(0.0)));
        assert!(!expected(Some(200), Some(1.0), Some(0.0)));
    }
}
