//! Protecting a server from overload with adaptive WS-QoS offers (the seed's section 7.4):
//! price-sensitive clients ask the QoS broker for an offer of the service under their own
//! price limit every `--poll-ms`; while one fits, each sends `--rate-per-client` requests
//! a second (open loop, a few keep-alive connections each). The clients join one after
//! another over `--ramp-s`. The service's offer raises its price while lather's CPU stays
//! above its threshold, so the clients with the lowest limits leave; below the lower
//! threshold it falls and they come back.
//!
//! Each second the run records the clients active, the requests offered and served, the
//! refused ones, the p99 of the answers of that second, the offer's price and lather's CPU
//! share (both from the server's `/metrics`). With `--leave-s`, every other client leaves
//! at that second, so the price has to come down again. It writes `timeline-LABEL.csv`, a summary
//! `qos-adaptive-LABEL.md` and charts, into `--out`. Run it once against a server whose
//! offer adapts and once against one whose offer does not, and compare.

use super::chart::{self, Line};
use super::publish;
use crate::BenchError;
use crate::http::conn::Conn;
use bytes::Bytes;
use hdrhistogram::Histogram;
use http_body_util::{BodyExt, Full};
use lather_qos::broker::{BrokerClient, Selection};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// `lather-bench qos-adaptive` arguments.
#[derive(Debug, clap::Args)]
pub struct QosAdaptiveArgs {
    /// The service's URL (http://host:port/path).
    #[arg(long)]
    pub url: String,
    /// The QoS broker's URL.
    #[arg(long)]
    pub broker: String,
    /// The service's name at the broker.
    #[arg(long, default_value = "echo")]
    pub service: String,
    /// The server's `/metrics` URL (CPU share and offer price are read there).
    #[arg(long)]
    pub metrics: String,
    /// The offer whose price is plotted.
    #[arg(long, default_value = "standard")]
    pub offer: String,
    /// Price-sensitive clients.
    #[arg(long, default_value_t = 40)]
    pub clients: usize,
    /// The lowest client's price limit; client i's is this plus i × `--limit-step`.
    #[arg(long, default_value_t = 0.1)]
    pub first_limit: f64,
    /// The step between the clients' price limits.
    #[arg(long, default_value_t = 0.1)]
    pub limit_step: f64,
    /// Requests per second each active client sends.
    #[arg(long, default_value_t = 200.0)]
    pub rate_per_client: f64,
    /// Keep-alive connections per client (a request finding none free is counted as not
    /// sent).
    #[arg(long, default_value_t = 4)]
    pub connections_per_client: usize,
    /// The clients join one after another over this many seconds.
    #[arg(long, default_value_t = 40.0)]
    pub ramp_s: f64,
    /// At this second every other client leaves for good (the seed's third part: the
    /// load falls, and the price with it); 0: nobody leaves.
    #[arg(long, default_value_t = 0)]
    pub leave_s: u64,
    /// The whole run, in seconds.
    #[arg(long, default_value_t = 240)]
    pub duration_s: u64,
    /// How often each client asks the broker, in milliseconds.
    #[arg(long, default_value_t = 500)]
    pub poll_ms: u64,
    /// The request body (SOAP 1.1) sent to the service.
    #[arg(long)]
    pub body: PathBuf,
    /// The label of this run (file names, legends).
    #[arg(long, default_value = "adaptive")]
    pub label: String,
    /// Samples from this second on count in the summary.
    #[arg(long, default_value_t = 60)]
    pub settle_s: u64,
    /// Where the files go.
    #[arg(long, default_value = "target/bench-results/qos-adaptive")]
    pub out: PathBuf,
}

/// One second of the run.
#[derive(Debug, Default, Clone)]
struct Second {
    offered: u64,
    unsent: u64,
    served: u64,
    refused: u64,
    p99_ms: f64,
    active: usize,
    price: f64,
    cpu: f64,
}

/// Counters the clients share.
struct Tally {
    start: Instant,
    offered: Vec<AtomicU64>,
    unsent: Vec<AtomicU64>,
    served: Vec<AtomicU64>,
    refused: Vec<AtomicU64>,
    latency: Vec<Mutex<Histogram<u64>>>,
    active: AtomicUsize,
}

impl Tally {
    fn second(&self) -> usize {
        usize::try_from(self.start.elapsed().as_secs())
            .unwrap_or(usize::MAX)
            .min(self.offered.len() - 1)
    }
}

fn fail(what: impl std::fmt::Display) -> BenchError {
    BenchError::Experiment(format!("qos-adaptive: {what}"))
}

/// Runs the experiment.
pub fn run(args: &QosAdaptiveArgs) -> Result<(), BenchError> {
    super::files::out_dir(&args.out)?;
    let body = Bytes::from(
        std::fs::read(&args.body).map_err(|e| fail(format!("{}: {e}", args.body.display())))?,
    );
    let (url, addr) = endpoint(&args.url, "--url")?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .map_err(|e| fail(format!("runtime: {e}")))?;
    let seconds = runtime.block_on(drive(args, addr, url, body))?;
    report(args, &seconds)
}

/// A URL and the socket address of its `host:port` (an IP address).
fn endpoint(text: &str, flag: &str) -> Result<(http::Uri, SocketAddr), BenchError> {
    let url: http::Uri = text.parse().map_err(|e| fail(format!("{flag}: {e}")))?;
    let addr = url
        .authority()
        .ok_or_else(|| fail(format!("{flag} has no host")))?
        .as_str()
        .parse()
        .map_err(|e| fail(format!("{flag} needs host:port as an IP address: {e}")))?;
    Ok((url, addr))
}

async fn drive(
    args: &QosAdaptiveArgs,
    addr: SocketAddr,
    url: http::Uri,
    body: Bytes,
) -> Result<Vec<Second>, BenchError> {
    let n = usize::try_from(args.duration_s).unwrap_or(usize::MAX) + 1;
    let tally = Arc::new(Tally {
        start: Instant::now(),
        offered: (0..n).map(|_| AtomicU64::new(0)).collect(),
        unsent: (0..n).map(|_| AtomicU64::new(0)).collect(),
        served: (0..n).map(|_| AtomicU64::new(0)).collect(),
        refused: (0..n).map(|_| AtomicU64::new(0)).collect(),
        latency: (0..n)
            .map(|_| Mutex::new(Histogram::new_with_bounds(1, 60_000_000, 2).expect("bounds")))
            .collect(),
        active: AtomicUsize::new(0),
    });
    let end = tally.start + Duration::from_secs(args.duration_s);
    let broker = BrokerClient::new(args.broker.clone(), Duration::from_secs(2))
        .map_err(|e| fail(format!("--broker: {e}")))?;
    let mut clients = Vec::new();
    for i in 0..args.clients {
        let join = tally.start
            + Duration::from_secs_f64(args.ramp_s * i as f64 / args.clients.max(1) as f64);
        let leaves = args.leave_s > 0 && i % 2 == 0;
        let client = Client {
            limit: args.first_limit + args.limit_step * i as f64,
            join,
            end: if leaves {
                end.min(tally.start + Duration::from_secs(args.leave_s))
            } else {
                end
            },
            addr,
            url: url.clone(),
            body: body.clone(),
            rate: args.rate_per_client,
            connections: args.connections_per_client,
            poll: Duration::from_millis(args.poll_ms),
            service: args.service.clone(),
        };
        clients.push(tokio::spawn(client.run(broker.clone(), tally.clone())));
    }
    let mut seconds = vec![Second::default(); n];
    let metrics = endpoint(&args.metrics, "--metrics")?;
    let price_key = format!(
        "lather_qos_offer_price{{service=\"{}\",offer=\"{}\"}}",
        args.service, args.offer
    );
    let mut tick = tokio::time::interval_at(
        tokio::time::Instant::from_std(tally.start + Duration::from_secs(1)),
        Duration::from_secs(1),
    );
    while Instant::now() < end {
        tick.tick().await;
        let s = tally.second().saturating_sub(1);
        let text = scrape(&metrics.0, metrics.1).await.unwrap_or_default();
        seconds[s].cpu = metric(&text, "lather_cpu_percent ").unwrap_or(f64::NAN);
        seconds[s].price = metric(&text, &price_key).unwrap_or(f64::NAN);
        seconds[s].active = tally.active.load(Ordering::Relaxed);
    }
    for c in clients {
        let _ = c.await;
    }
    for (s, second) in seconds.iter_mut().enumerate() {
        second.offered = tally.offered[s].load(Ordering::Relaxed);
        second.unsent = tally.unsent[s].load(Ordering::Relaxed);
        second.served = tally.served[s].load(Ordering::Relaxed);
        second.refused = tally.refused[s].load(Ordering::Relaxed);
        let h = tally.latency[s].lock().unwrap_or_else(|p| p.into_inner());
        second.p99_ms = if h.is_empty() {
            0.0
        } else {
            h.value_at_quantile(0.99) as f64 / 1000.0
        };
    }
    seconds.truncate(n - 1);
    Ok(seconds)
}

/// A GET of `/metrics`; `None` when it fails.
async fn scrape(url: &http::Uri, addr: SocketAddr) -> Option<String> {
    let mut conn = Conn::connect(addr).await.ok()?;
    let req = http::Request::get(url.path())
        .header(http::header::HOST, url.authority()?.as_str())
        .body(Full::new(Bytes::new()))
        .ok()?;
    let resp = tokio::time::timeout(Duration::from_secs(2), conn.sender.send_request(req))
        .await
        .ok()?
        .ok()?;
    let bytes = resp.into_body().collect().await.ok()?.to_bytes();
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// The value of the metric line starting with `prefix`.
fn metric(text: &str, prefix: &str) -> Option<f64> {
    text.lines()
        .find(|l| l.starts_with(prefix))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

/// One price-sensitive client.
struct Client {
    limit: f64,
    join: Instant,
    end: Instant,
    addr: SocketAddr,
    url: http::Uri,
    body: Bytes,
    rate: f64,
    connections: usize,
    poll: Duration,
    service: String,
}

impl Client {
    async fn run(self, broker: BrokerClient, tally: Arc<Tally>) {
        tokio::time::sleep_until(tokio::time::Instant::from_std(self.join)).await;
        let pool: Arc<Mutex<Vec<Conn>>> = Arc::new(Mutex::new(Vec::new()));
        let open = Arc::new(AtomicUsize::new(0));
        let want = Selection {
            service: self.service.clone(),
            max_price: Some(self.limit + 1e-9),
            ..Selection::default()
        };
        let mut active = false;
        let mut next_poll = Instant::now();
        let gap = Duration::from_secs_f64(1.0 / self.rate.max(0.001));
        let mut next = Instant::now();
        while Instant::now() < self.end {
            if Instant::now() >= next_poll {
                let fits = broker.select(&want).await.is_ok();
                if fits != active {
                    if fits {
                        tally.active.fetch_add(1, Ordering::Relaxed);
                    } else {
                        tally.active.fetch_sub(1, Ordering::Relaxed);
                    }
                    active = fits;
                }
                next_poll = Instant::now() + self.poll;
                next = next.max(Instant::now());
            }
            tokio::time::sleep_until(tokio::time::Instant::from_std(next.min(next_poll))).await;
            if !active || Instant::now() < next {
                continue;
            }
            next += gap;
            let s = tally.second();
            tally.offered[s].fetch_add(1, Ordering::Relaxed);
            let taken = pool.lock().unwrap_or_else(|p| p.into_inner()).pop();
            let conn = match taken {
                Some(c) => Some(c),
                None if open.load(Ordering::Relaxed) < self.connections => {
                    open.fetch_add(1, Ordering::Relaxed);
                    None
                }
                None => {
                    tally.unsent[s].fetch_add(1, Ordering::Relaxed);
                    continue;
                }
            };
            let (pool, open, tally) = (pool.clone(), open.clone(), tally.clone());
            let (addr, url, body) = (self.addr, self.url.clone(), self.body.clone());
            tokio::spawn(async move {
                let sent = Instant::now();
                let conn = match conn {
                    Some(c) => Ok(c),
                    None => Conn::connect(addr).await,
                };
                let Ok(mut conn) = conn else {
                    open.fetch_sub(1, Ordering::Relaxed);
                    tally.refused[tally.second()].fetch_add(1, Ordering::Relaxed);
                    return;
                };
                let ok = send(&mut conn, &url, body).await;
                let s = tally.second();
                match ok {
                    Some(true) => {
                        tally.served[s].fetch_add(1, Ordering::Relaxed);
                        let us = u64::try_from(sent.elapsed().as_micros()).unwrap_or(u64::MAX);
                        let _ = tally.latency[s]
                            .lock()
                            .unwrap_or_else(|p| p.into_inner())
                            .record(us.clamp(1, 60_000_000));
                    }
                    Some(false) => {
                        tally.refused[s].fetch_add(1, Ordering::Relaxed);
                    }
                    None => {
                        tally.refused[s].fetch_add(1, Ordering::Relaxed);
                        open.fetch_sub(1, Ordering::Relaxed);
                        return;
                    }
                }
                pool.lock().unwrap_or_else(|p| p.into_inner()).push(conn);
            });
        }
        if active {
            tally.active.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

/// Sends one request: `Some(true)` for a 2xx answer, `Some(false)` for another, `None`
/// when the connection failed (it is dropped).
async fn send(conn: &mut Conn, url: &http::Uri, body: Bytes) -> Option<bool> {
    let req = http::Request::post(url.path())
        .header(http::header::HOST, url.authority()?.as_str())
        .header(http::header::CONTENT_TYPE, "text/xml; charset=utf-8")
        .header("SOAPAction", "\"urn:lather:echo#echo\"")
        .body(Full::new(body))
        .ok()?;
    let resp = tokio::time::timeout(Duration::from_secs(30), conn.sender.send_request(req))
        .await
        .ok()?
        .ok()?;
    let status = resp.status();
    resp.into_body().collect().await.ok()?;
    Some(status.is_success())
}

fn report(args: &QosAdaptiveArgs, seconds: &[Second]) -> Result<(), BenchError> {
    let label = &args.label;
    let mut csv =
        String::from("second,active,offered,unsent,served,refused,p99_ms,price,cpu_percent\n");
    for (s, x) in seconds.iter().enumerate() {
        csv.push_str(&format!(
            "{s},{},{},{},{},{},{:.3},{},{}\n",
            x.active, x.offered, x.unsent, x.served, x.refused, x.p99_ms, x.price, x.cpu
        ));
    }
    let csv_path = args.out.join(format!("timeline-{label}.csv"));
    std::fs::write(&csv_path, csv).map_err(|e| fail(format!("{}: {e}", csv_path.display())))?;
    let settle = usize::try_from(args.settle_s).unwrap_or(usize::MAX);
    let late: Vec<&Second> = seconds
        .iter()
        .skip(settle)
        .filter(|x| x.cpu.is_finite())
        .collect();
    let inside = late
        .iter()
        .filter(|x| (65.0..=85.0).contains(&x.cpu))
        .count();
    let mut p99: Vec<f64> = late.iter().map(|x| x.p99_ms).collect();
    p99.sort_by(f64::total_cmp);
    let median = |v: &[f64]| v.get(v.len() / 2).copied().unwrap_or(f64::NAN);
    let offered: u64 = late.iter().map(|x| x.offered).sum();
    let served: u64 = late.iter().map(|x| x.served).sum();
    let refused: u64 = late.iter().map(|x| x.refused + x.unsent).sum();
    let mut prices: Vec<f64> = late
        .iter()
        .map(|x| x.price)
        .filter(|p| p.is_finite())
        .collect();
    prices.sort_by(f64::total_cmp);
    let markdown = format!(
        "### {label}: {} clients (limits {:.2}–{:.2}), {} req/s each, {} s\n\n\
         After second {settle} ({} samples):\n\n\
         | CPU samples in 65–85% | CPU median | p99 median (ms) | p99 max (ms) | offered/s | served/s | refused or unsent | price range |\n\
         |---:|---:|---:|---:|---:|---:|---:|---|\n\
         | {:.1}% ({inside}/{}) | {:.0}% | {:.2} | {:.2} | {:.0} | {:.0} | {refused} | {:.2}–{:.2} |\n",
        args.clients,
        args.first_limit,
        args.first_limit + args.limit_step * (args.clients.saturating_sub(1)) as f64,
        args.rate_per_client,
        args.duration_s,
        late.len(),
        100.0 * inside as f64 / late.len().max(1) as f64,
        late.len(),
        median(&{
            let mut c: Vec<f64> = late.iter().map(|x| x.cpu).collect();
            c.sort_by(f64::total_cmp);
            c
        }),
        median(&p99),
        p99.last().copied().unwrap_or(f64::NAN),
        offered as f64 / late.len().max(1) as f64,
        served as f64 / late.len().max(1) as f64,
        prices.first().copied().unwrap_or(f64::NAN),
        prices.last().copied().unwrap_or(f64::NAN),
    );
    publish(&args.out, &format!("qos-adaptive-{label}"), &markdown)?;
    let series = |f: &dyn Fn(&Second) -> f64| -> Vec<(f64, f64)> {
        seconds
            .iter()
            .enumerate()
            .filter(|(_, x)| f(x).is_finite())
            .map(|(s, x)| (s as f64, f(x)))
            .collect()
    };
    chart::lines(
        &args.out.join(format!("load-{label}.svg")),
        &format!("Offered and served load ({label})"),
        "second",
        "requests/s",
        &[
            Line {
                name: "offered".into(),
                points: series(&|x| x.offered as f64),
            },
            Line {
                name: "served".into(),
                points: series(&|x| x.served as f64),
            },
        ],
        false,
    )?;
    chart::lines(
        &args.out.join(format!("cpu-price-{label}.svg")),
        &format!("lather CPU % and offer price × 10 ({label})"),
        "second",
        "CPU % / price × 10",
        &[
            Line {
                name: "CPU %".into(),
                points: series(&|x| x.cpu),
            },
            Line {
                name: "price × 10".into(),
                points: series(&|x| x.price * 10.0),
            },
            Line {
                name: "active clients".into(),
                points: series(&|x| x.active as f64),
            },
        ],
        false,
    )?;
    chart::lines(
        &args.out.join(format!("p99-{label}.svg")),
        &format!("p99 response time of each second ({label})"),
        "second",
        "ms",
        &[Line {
            name: "p99".into(),
            points: series(&|x| x.p99_ms.max(0.01)),
        }],
        true,
    )?;
    Ok(())
}
