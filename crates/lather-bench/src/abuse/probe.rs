//! The probe: a normal echo request every ~20 ms while a case runs, its
//! latency and failures.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::client::{RawCall, send};

/// Pause between the end of one probe and the start of the next.
const INTERVAL: Duration = Duration::from_millis(20);

/// What the probe saw.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct ProbeStats {
    /// Probes answered 200 with the echoed text.
    pub(crate) ok: u64,
    /// Probes not answered correctly within the probe timeout.
    pub(crate) failures: u64,
    /// The first failure, as an example.
    pub(crate) first_failure: Option<String>,
    /// Median latency of the answered probes, ms.
    pub(crate) p50_ms: f64,
    /// 99th percentile, ms.
    pub(crate) p99_ms: f64,
}

/// A running probe loop.
#[derive(Debug)]
pub(crate) struct Probe {
    stop: Arc<AtomicBool>,
    task: JoinHandle<ProbeStats>,
}

impl Probe {
    /// Starts probing `path` on `addr`; each probe must be answered within
    /// `timeout`.
    pub(crate) fn start(addr: SocketAddr, path: String, timeout: Duration) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let task = tokio::spawn(async move {
            let body = echo_request("probe");
            let mut latencies = Vec::new();
            let mut stats = ProbeStats::default();
            // At least one probe, however short the case.
            loop {
                let start = Instant::now();
                let mut call = RawCall::soap12(&path, body.as_bytes(), timeout);
                call.from = probe_source(addr);
                match send(addr, &call).await {
                    Ok(a) if a.status == 200 && a.body.contains("probe") => {
                        stats.ok += 1;
                        latencies.push(start.elapsed());
                    }
                    other => {
                        stats.failures += 1;
                        if stats.first_failure.is_none() {
                            stats.first_failure = Some(match other {
                                Ok(a) => format!("status {}", a.status),
                                Err(e) => e,
                            });
                        }
                    }
                }
                if flag.load(Ordering::Relaxed) {
                    break;
                }
                tokio::time::sleep(INTERVAL).await;
            }
            latencies.sort();
            stats.p50_ms = quantile_ms(&latencies, 0.50);
            stats.p99_ms = quantile_ms(&latencies, 0.99);
            stats
        });
        Probe { stop, task }
    }

    /// Stops the loop after its current probe (there is always one);
    /// returns what it saw.
    pub(crate) async fn finish(self) -> ProbeStats {
        self.stop.store(true, Ordering::Relaxed);
        self.task.await.unwrap_or_else(|e| ProbeStats {
            failures: 1,
            first_failure: Some(format!("probe task: {e}")),
            ..ProbeStats::default()
        })
    }
}

/// The probe's local address: 127.0.0.9 when the server is on IPv4
/// loopback, so that the hostile connections (from 127.0.0.1) and the
/// probe count as different clients for a per-address connection cap.
fn probe_source(server: SocketAddr) -> Option<IpAddr> {
    let probe = IpAddr::from([127, 0, 0, 9]);
    (server.is_ipv4() && server.ip().is_loopback()).then_some(probe)
}

/// The `q` quantile of sorted `values` in ms (nearest rank); 0 when empty.
pub(crate) fn quantile_ms(sorted: &[Duration], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1].as_secs_f64() * 1000.0
}

/// A SOAP 1.2 echo request carrying `text`.
pub(crate) fn echo_request(text: &str) -> String {
    format!(
        r#"<s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope"><s:Body><ns:echo xmlns:ns="urn:lather:echo"><text>{text}</text></ns:echo></s:Body></s:Envelope>"#
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_use_the_nearest_rank() {
        let v: Vec<Duration> = (1..=100).map(Duration::from_millis).collect();
        assert_eq!(quantile_ms(&v, 0.5), 50.0);
        assert_eq!(quantile_ms(&v, 0.99), 99.0);
        assert_eq!(quantile_ms(&[], 0.5), 0.0);
    }
}
