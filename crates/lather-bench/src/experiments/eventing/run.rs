//! One run: start the sink processes, subscribe them to an in-process event source, publish
//! at a rate (or as fast as delivery keeps up), collect and summarise.

use super::BindingArg;
use super::epe::{self, Shape};
use super::sinks::Sinks;
use super::stats::SampleSummary;
use crate::BenchError;
use crate::delay_proxy::DelayProxy;
use crate::procfs::WatchedProcess;
use bytes::Bytes;
use lather_envelope::{Envelope, Limits};
use lather_eventing::{DeliveryProbe, EventSource, SourceSettings, unix_ns};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::runtime::Runtime;

/// How events are offered.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Load {
    /// `events` events at `per_s` events per second (open loop, 1 ms timer resolution).
    Rate { per_s: f64, events: u64 },
    /// For `secs` seconds, as fast as delivery takes them (at most `WINDOW` events per
    /// subscriber waiting).
    Max { secs: f64 },
}

/// One configuration.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct RunSpec {
    pub(crate) binding: BindingArg,
    pub(crate) subscribers: usize,
    pub(crate) shape: Shape,
    pub(crate) auth: bool,
    pub(crate) refs: bool,
    pub(crate) load: Load,
    /// Each sink behind a delaying proxy (this delay each way), as over a wide-area link.
    pub(crate) wan: Option<Duration>,
}

impl RunSpec {
    /// The EPEs as table text.
    pub(crate) fn epes(&self) -> &'static str {
        match (self.auth, self.refs) {
            (false, false) => "none",
            (true, false) => "auth",
            (false, true) => "ref",
            (true, true) => "auth+ref",
        }
    }
}

/// What a run measured (times in µs).
#[derive(Debug, Clone)]
pub(crate) struct RunResult {
    pub(crate) spec: RunSpec,
    pub(crate) expected: u64,
    pub(crate) received: u64,
    pub(crate) dropped: u64,
    pub(crate) failures: u64,
    /// Publish to bytes ready and handed to the connection, per notification.
    pub(crate) publisher: SampleSummary,
    /// Publish to arrival at the sink.
    pub(crate) to_sink: SampleSummary,
    /// `to_sink`, sorted, for percentiles.
    pub(crate) to_sink_sorted: Vec<f64>,
    /// Consuming at the sink.
    pub(crate) client: SampleSummary,
    /// Publish to consumed: `to_sink` + `client` per notification.
    pub(crate) total: SampleSummary,
    /// Notifications received per second, first publish to last arrival.
    pub(crate) throughput: f64,
    /// Events offered per second, as achieved.
    pub(crate) offered: f64,
    /// This process's CPU time (the publisher, its delivery and the bench's own publishing
    /// loop and probe), user and system, per notification received, in microseconds.
    pub(crate) publisher_cpu_us: f64,
}

/// Events per subscriber that may wait undelivered in a max-throughput run.
const WINDOW: u64 = 2000;

/// The Subscribe for a sink at `address` (`host:port`) in `binding`.
fn subscribe(binding: BindingArg, address: &str, index: usize) -> Result<Envelope, BenchError> {
    let notify = match binding {
        BindingArg::Http => format!("http://{address}/sink"),
        BindingArg::SoapTcp => format!("soap.tcp://{address}"),
        BindingArg::Binary => format!("lather.bin://{address}"),
    };
    let text = format!(
        r#"<s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope"><s:Body><wse:Subscribe xmlns:wse="http://www.w3.org/2011/03/ws-evt" xmlns:wsa="http://www.w3.org/2005/08/addressing"><wse:Delivery><wse:NotifyTo><wsa:Address>{notify}</wsa:Address><wsa:ReferenceParameters><b:Sink xmlns:b="{}">{index}</b:Sink></wsa:ReferenceParameters></wse:NotifyTo></wse:Delivery></wse:Subscribe></s:Body></s:Envelope>"#,
        epe::NS
    );
    Envelope::parse(Bytes::from(text), &Limits::default())
        .map_err(|e| BenchError::Experiment(format!("subscribe envelope: {e}")))
}

/// Puts a delaying proxy (`delay` each way, no busy wait) in front of each of `sinks`
/// (`host:port`); returns the proxies' addresses. The proxies' threads wait in `accept`
/// until the process ends.
fn behind_proxies(sinks: &[String], delay: Duration) -> Result<Vec<String>, BenchError> {
    let mut out = Vec::with_capacity(sinks.len());
    for sink in sinks {
        let listen = std::net::SocketAddr::from(([127, 0, 0, 1], 0));
        let proxy = DelayProxy::bind(listen, sink.clone(), delay)?.coarse();
        out.push(proxy.local_addr().to_string());
        std::thread::Builder::new()
            .name("eventing-wan".into())
            .spawn(move || proxy.serve(false))
            .map_err(|e| BenchError::Experiment(format!("delay proxy thread: {e}")))?;
    }
    Ok(out)
}

/// Runs `spec` against fresh sinks; `reference` is the reference server's base URL; the
/// event source holds back a sink's writes `delivery_wait` apart.
pub(crate) fn run(
    runtime: &Runtime,
    spec: RunSpec,
    reference: &str,
    auth_key: &str,
    delivery_wait: Duration,
) -> Result<RunResult, BenchError> {
    let expect = match spec.load {
        Load::Rate { events, .. } => events,
        Load::Max { .. } => 0,
    };
    let sinks = Sinks::start(
        spec.subscribers,
        spec.binding,
        expect,
        spec.auth.then_some(auth_key),
        spec.refs,
        90,
    )?;
    // Room for every expected notification up front: growing the vector while the probe
    // runs would copy it inside the measured publisher.
    let expected = usize::try_from(expect)
        .unwrap_or(usize::MAX)
        .saturating_mul(spec.subscribers)
        .min(1 << 24);
    let publisher_us: Arc<Mutex<Vec<u32>>> = Arc::new(Mutex::new(Vec::with_capacity(expected)));
    let delivered = Arc::new(AtomicU64::new(0));
    let probe = {
        let publisher_us = publisher_us.clone();
        let delivered = delivered.clone();
        DeliveryProbe(Arc::new(move |_, _, published, written| {
            delivered.fetch_add(1, Ordering::Relaxed);
            let us = written.saturating_sub(published) / 1000;
            publisher_us
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push(u32::try_from(us).unwrap_or(u32::MAX));
        }))
    };
    let key = spec.auth.then(|| auth_key.as_bytes().to_vec());
    let reference = spec.refs.then(|| reference.to_owned());
    let myself = WatchedProcess::new(std::process::id())
        .map_err(|e| BenchError::Experiment(format!("the publisher's CPU time: {e}")))?;
    let (source, start_ns, offered, queued, events, cpu) = runtime.block_on(async {
        let source = EventSource::open(SourceSettings {
            queue_capacity: 200_000,
            delivered: Some(probe),
            delivery_wait,
            ..SourceSettings::allowing_loopback()
        })
        .map_err(|e| BenchError::Experiment(e.to_string()))?;
        let addresses = match spec.wan {
            Some(delay) => behind_proxies(&sinks.addresses, delay)?,
            None => sinks.addresses.clone(),
        };
        for (i, address) in addresses.iter().enumerate() {
            source
                .handle(
                    &subscribe(spec.binding, address, i)?,
                    "http://127.0.0.1/bench",
                )
                .await
                .map_err(|f| BenchError::Experiment(format!("subscribe: {f}")))?;
        }
        let subs = spec.subscribers as u64;
        let cpu_before = myself.cpu().ok();
        let start_ns = unix_ns();
        let t0 = Instant::now();
        let mut queued = 0u64;
        let mut n = 0u64;
        match spec.load {
            Load::Rate { per_s, events } => {
                while n < events {
                    let due = t0 + Duration::from_secs_f64(n as f64 / per_s);
                    if due > Instant::now() {
                        tokio::time::sleep_until(due.into()).await;
                    }
                    queued += source.publish_event(epe::event(
                        spec.shape,
                        n,
                        key.as_deref(),
                        reference.as_deref(),
                    )) as u64;
                    n += 1;
                }
            }
            Load::Max { secs } => {
                let until = t0 + Duration::from_secs_f64(secs);
                while Instant::now() < until {
                    if queued.saturating_sub(delivered.load(Ordering::Relaxed)) > WINDOW * subs {
                        tokio::time::sleep(Duration::from_millis(1)).await;
                        continue;
                    }
                    for _ in 0..64 {
                        queued += source.publish_event(epe::event(
                            spec.shape,
                            n,
                            key.as_deref(),
                            reference.as_deref(),
                        )) as u64;
                        n += 1;
                    }
                    tokio::task::yield_now().await;
                }
            }
        }
        let offered = n as f64 / t0.elapsed().as_secs_f64();
        // Let delivery drain (bounded).
        let deadline = Instant::now() + Duration::from_secs(60);
        while delivered.load(Ordering::Relaxed) < queued && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let cpu = cpu_before
            .zip(myself.cpu().ok())
            .map(|(before, after)| myself.used(before, after));
        Ok::<_, BenchError>((source, start_ns, offered, queued, n, cpu))
    })?;
    let records = sinks.finish()?;
    {
        let _in_runtime = runtime.enter();
        drop(source);
    }
    let subs = spec.subscribers as u64;
    let mut to_sink = Vec::new();
    let mut totals = Vec::new();
    let mut client = Vec::new();
    let mut last_arrival = start_ns;
    let mut failures = 0;
    for r in &records {
        failures += r.auth_failed + r.ref_failed + r.unreadable;
        last_arrival = last_arrival.max(r.last_arrival_ns);
        for (t, c) in r.to_sink_us.iter().zip(&r.client_us) {
            to_sink.push(f64::from(*t));
            client.push(f64::from(*c));
            totals.push(f64::from(*t) + f64::from(*c));
        }
    }
    let received = to_sink.len() as u64;
    let publisher = SampleSummary::of(
        publisher_us
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .iter()
            .map(|&u| f64::from(u)),
    );
    let span = (last_arrival.saturating_sub(start_ns)) as f64 / 1e9;
    let mut sorted = to_sink.clone();
    sorted.sort_by(f64::total_cmp);
    Ok(RunResult {
        spec,
        expected: events * subs,
        received,
        dropped: events * subs - queued,
        failures,
        publisher,
        to_sink: SampleSummary::of(to_sink),
        to_sink_sorted: sorted,
        client: SampleSummary::of(client),
        total: SampleSummary::of(totals),
        throughput: if span > 0.0 {
            received as f64 / span
        } else {
            0.0
        },
        offered,
        publisher_cpu_us: match cpu {
            Some(cpu) if received > 0 => cpu.as_secs_f64() * 1e6 / received as f64,
            _ => f64::NAN,
        },
    })
}
