//! `lather-bench eventing`: the WS-Eventing delivery study's experiments on lather's event
//! source. One publisher (an `EventSource` in this process, published to with `EventSource::publish_event`, so
//! what is measured is delivery and not a publish request sharing the cores), 10 or 20
//! subscriber processes (`lather-bench eventing-sink`), the three bindings, changed-fields
//! vs full-record events, with and without the two extra processing elements. Reported in
//! the paper's table shape, plus a rate sweep and a max-throughput run.

mod epe;
mod http_receiver;
mod report;
mod run;
mod sink;
mod sinks;
mod stats;

pub use epe::Shape;
pub use sink::{EventingSinkArgs, run as sink};

use super::files::out_dir;
use crate::BenchError;
use http_body_util::Full;
use hyper_util::rt::TokioIo;
use run::{Load, RunSpec};
use std::path::PathBuf;
use std::time::Duration;
use tokio::net::TcpListener;

/// A delivery binding, as the sink and the NotifyTo address name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum BindingArg {
    /// SOAP over HTTP (`http://`).
    Http,
    /// SOAP over TCP, length-prefixed (`soap.tcp://`).
    SoapTcp,
    /// lather's binary frame over TCP (`lather.bin://`).
    Binary,
}

impl BindingArg {
    /// The command-line and table name.
    pub(crate) fn name(self) -> &'static str {
        match self {
            BindingArg::Http => "http",
            BindingArg::SoapTcp => "soap-tcp",
            BindingArg::Binary => "binary",
        }
    }
}

const BINDINGS: [BindingArg; 3] = [BindingArg::Binary, BindingArg::SoapTcp, BindingArg::Http];

/// Parts of the experiment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum EventingPart {
    /// Latency tables: baseline (10, 20 subscribers), extra processing elements, full record.
    Tables,
    /// Latency against offered rate, 20 subscribers.
    Sweep,
    /// Notifications per second when publishing as fast as delivery takes them.
    Max,
    /// The baseline (10 subscribers) with every sink behind a delaying proxy: a wide-area
    /// link of `--wan-delay-ms` each way.
    Wan,
}

/// Arguments of `lather-bench eventing`.
#[derive(Debug, Clone, clap::Args)]
pub struct EventingArgs {
    /// Parts to run (repeatable; default all)
    #[arg(long = "part", value_enum)]
    pub parts: Vec<EventingPart>,
    /// Bindings to run (repeatable; default all three)
    #[arg(long = "binding", value_enum)]
    pub bindings: Vec<BindingArg>,
    /// Events per table run
    #[arg(long, default_value_t = 3000)]
    pub events: u64,
    /// Events per second in table runs
    #[arg(long, default_value_t = 1000.0)]
    pub rate: f64,
    /// Offered event rates of the sweep (events/s, comma-separated)
    #[arg(long, value_delimiter = ',', default_value = "1000,2500,5000,10000")]
    pub sweep_rates: Vec<f64>,
    /// Seconds per sweep point
    #[arg(long, default_value_t = 2.0)]
    pub sweep_secs: f64,
    /// Subscribers in the sweep and the max-throughput runs
    #[arg(long, default_value_t = 20)]
    pub subscribers: usize,
    /// Seconds per max-throughput run
    #[arg(long, default_value_t = 3.0)]
    pub max_secs: f64,
    /// The wide-area part's delay, each way, in milliseconds
    #[arg(long, default_value_t = 5.0)]
    pub wan_delay_ms: f64,
    /// The key of the authentication header (shared with the sinks)
    #[arg(long, default_value = "lather-bench-shared-key")]
    pub auth_key: String,
    /// Publisher runtime threads: 1 (the default) runs the publisher and every sink's
    /// delivery on one current-thread runtime, as a `lather serve` I/O thread does; more
    /// use a work-stealing runtime of that many threads
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// The event source's `delivery_wait_ms`: the shortest time between two writes to one
    /// sink (0: each batch at once, the default)
    #[arg(long, default_value_t = 0)]
    pub delivery_wait_ms: u64,
    /// Directory for the tables and charts
    #[arg(long, default_value = "docs/bench")]
    pub out: PathBuf,
}

/// Runs the chosen parts and writes `eventing*.md` and charts into `--out`.
pub fn run(args: &EventingArgs) -> Result<(), BenchError> {
    out_dir(&args.out)?;
    let parts = if args.parts.is_empty() {
        vec![
            EventingPart::Tables,
            EventingPart::Sweep,
            EventingPart::Max,
            EventingPart::Wan,
        ]
    } else {
        args.parts.clone()
    };
    let bindings: Vec<BindingArg> = if args.bindings.is_empty() {
        BINDINGS.to_vec()
    } else {
        args.bindings.clone()
    };
    // One thread: the publisher and every sink's delivery on a current-thread runtime, as
    // on one of `lather serve`'s per-core I/O threads; more: a work-stealing runtime.
    let mut runtime = match args.threads {
        1 => tokio::runtime::Builder::new_current_thread(),
        n => {
            let mut b = tokio::runtime::Builder::new_multi_thread();
            b.worker_threads(n.max(1));
            b
        }
    };
    let runtime = runtime
        .thread_name("lather-eventing-bench")
        .enable_all()
        .build()
        .map_err(|e| BenchError::Experiment(format!("runtime: {e}")))?;
    let reference = runtime.block_on(reference_server())?;
    let one = |spec: RunSpec| {
        eprintln!(
            "eventing: {} × {} {:?} epe={} {:?}",
            spec.binding.name(),
            spec.subscribers,
            spec.shape,
            spec.epes(),
            spec.load
        );
        let wait = Duration::from_millis(args.delivery_wait_ms);
        run::run(&runtime, spec, &reference, &args.auth_key, wait)
    };
    let base = |binding, subscribers| RunSpec {
        binding,
        subscribers,
        shape: Shape::Changed,
        auth: false,
        refs: false,
        load: Load::Rate {
            per_s: args.rate,
            events: args.events,
        },
        wan: None,
    };
    for part in parts {
        match part {
            EventingPart::Tables => {
                let mut groups = Vec::new();
                for subscribers in [10, 20] {
                    let runs = bindings
                        .iter()
                        .map(|&b| one(base(b, subscribers)))
                        .collect::<Result<Vec<_>, _>>()?;
                    groups.push((
                        format!("Baseline, {subscribers} subscribers, changed fields"),
                        runs,
                    ));
                }
                let mut runs = Vec::new();
                for (auth, refs) in [(true, false), (false, true), (true, true)] {
                    for &b in &bindings {
                        runs.push(one(RunSpec {
                            auth,
                            refs,
                            ..base(b, 10)
                        })?);
                    }
                }
                groups.push(("Extra processing elements, 10 subscribers".to_owned(), runs));
                let runs = bindings
                    .iter()
                    .map(|&b| {
                        one(RunSpec {
                            shape: Shape::Full,
                            ..base(b, 10)
                        })
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                groups.push(("Full record, 10 subscribers".to_owned(), runs));
                report::tables(&args.out, "eventing", args, &groups)?;
            }
            EventingPart::Sweep => {
                let mut runs = Vec::new();
                for &b in &bindings {
                    for &rate in &args.sweep_rates {
                        runs.push(one(RunSpec {
                            load: Load::Rate {
                                per_s: rate,
                                events: (rate * args.sweep_secs) as u64,
                            },
                            ..base(b, args.subscribers)
                        })?);
                    }
                }
                report::sweep(&args.out, args, &runs)?;
            }
            EventingPart::Max => {
                let runs = bindings
                    .iter()
                    .map(|&b| {
                        one(RunSpec {
                            load: Load::Max {
                                secs: args.max_secs,
                            },
                            ..base(b, args.subscribers)
                        })
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                report::max(&args.out, args, &runs)?;
            }
            EventingPart::Wan => {
                let delay = Duration::from_secs_f64(args.wan_delay_ms.max(0.0) / 1000.0);
                let runs = bindings
                    .iter()
                    .map(|&b| {
                        one(RunSpec {
                            wan: Some(delay),
                            ..base(b, 10)
                        })
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                let title = format!(
                    "Wide area: every sink behind a proxy delaying {} ms each way, 10 subscribers",
                    args.wan_delay_ms
                );
                report::tables(&args.out, "eventing-wan", args, &[(title, runs)])?;
            }
        }
    }
    Ok(())
}

/// Serves `GET /ref/{n}` with [`epe::reference_document`]; returns its base URL.
async fn reference_server() -> Result<String, BenchError> {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| BenchError::Experiment(format!("reference server: {e}")))?;
    let addr = listener
        .local_addr()
        .map_err(|e| BenchError::Experiment(format!("reference server: {e}")))?;
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let _ = stream.set_nodelay(true);
            tokio::spawn(async move {
                let svc = hyper::service::service_fn(
                    |req: http::Request<hyper::body::Incoming>| async move {
                        let n = req
                            .uri()
                            .path()
                            .rsplit('/')
                            .next()
                            .and_then(|n| n.parse::<u64>().ok())
                            .unwrap_or(0);
                        Ok::<_, std::convert::Infallible>(http::Response::new(Full::new(
                            epe::reference_document(n),
                        )))
                    },
                );
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), svc)
                    .await;
            });
        }
    });
    Ok(format!("http://{addr}"))
}
