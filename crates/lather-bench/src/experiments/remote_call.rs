//! The cost of one remote handler call, split as equation 1 (W = Tcomp + Tt + C): a
//! handler run in this process and the same handler run on a `lather worker` process
//! through NATS, called one at a time and interleaved on the same message, so both see the
//! same machine state. Beside them, in the same interleaving, a bare NATS request/reply of
//! the same size to a responder in another process (`lather-bench nats-echo`): W less it is
//! lather's own part of the call. The caller runs on a single-thread runtime, as a
//! `lather serve` I/O thread does.

use super::files::{Scratch, out_dir};
use super::workers::Workers;
use crate::BenchError;
use crate::http::SoapVersionArg;
use crate::request::soap_echo_body;
use lather_config::Config;
use lather_envelope::Envelope;
use lather_pipeline::{Context, Direction, Message};
use lather_remote::{CallSplit, Link, RemoteHandler};
use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Arguments of `lather-bench remote-call`.
#[derive(Debug, Clone, clap::Args)]
pub struct RemoteCallArgs {
    /// The NATS server the worker and the caller meet at
    #[arg(long, value_name = "URL")]
    pub nats: String,
    /// The handler's `[handlers.h]` body, e.g. `kind = "logging"`
    #[arg(long, default_value = "kind = \"logging\"")]
    pub handler: String,
    /// Measured calls of each placement
    #[arg(long, default_value_t = 5000)]
    pub calls: usize,
    /// Calls of each placement made before measuring
    #[arg(long, default_value_t = 500)]
    pub warmup: usize,
    /// Size of the text inside the request (the message is ~this + 200 bytes)
    #[arg(long, value_name = "N", default_value_t = 1800)]
    pub payload_bytes: usize,
    /// Where the Markdown table goes
    #[arg(long, default_value = "docs/bench")]
    pub out: PathBuf,
    /// Start each worker under this command, split at spaces, e.g. `ip netns exec w` to
    /// put the workers in another network namespace
    #[arg(long, value_name = "COMMAND")]
    pub worker_wrap: Option<String>,
}

/// Runs the measurement and writes `remote-call.md`.
pub fn run(args: &RemoteCallArgs) -> Result<(), BenchError> {
    if args.calls == 0 {
        return Err(BenchError::InvalidArgument(
            "--calls must be positive".into(),
        ));
    }
    out_dir(&args.out)?;
    let scratch = Scratch::new("remote-call")?;
    let toml = format!(
        "[nats]\nurl = \"{}\"\n\n[handlers.h]\n{}\nplacement = \"remote\"\nfallback = \"fault\"\n",
        args.nats, args.handler
    );
    let path = scratch.write("remote-call.toml", toml.as_bytes())?;
    let config = Config::load(&path).map_err(|e| BenchError::Experiment(e.to_string()))?;
    let _workers = Workers::start(&path, "h", 1, args.worker_wrap.as_deref())?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| BenchError::Experiment(format!("cannot start a runtime: {e}")))?;
    let body = soap_echo_body(SoapVersionArg::V11, args.payload_bytes);
    let size = body.len();
    let samples = runtime.block_on(measure(args, &config, body))?;
    let markdown = table(args, size, &samples);
    super::publish(&args.out, "remote-call", &markdown)
}

/// What one run gathered, in microseconds.
struct Samples {
    local: Vec<f64>,
    remote: Vec<f64>,
    handler: Vec<f64>,
    transfer: Vec<f64>,
    overhead: Vec<f64>,
    /// The part of `overhead` on the worker.
    at_worker: Vec<f64>,
    /// A bare NATS request/reply of the same frame size, answered at once in this process.
    floor_here: Vec<f64>,
    /// The same, answered by another process: the floor under W.
    floor: Vec<f64>,
}

async fn measure(
    args: &RemoteCallArgs,
    config: &Config,
    body: bytes::Bytes,
) -> Result<Samples, BenchError> {
    let cfg = config
        .handlers
        .get("h")
        .ok_or_else(|| BenchError::Experiment("no [handlers.h]".into()))?;
    let (local, options) = lather_compose::build_handler("h", cfg, config)
        .map_err(|e| BenchError::Experiment(e.to_string()))?;
    let nats = config
        .nats
        .as_ref()
        .ok_or_else(|| BenchError::Experiment("no [nats]".into()))?;
    let link = Arc::new(Link::new(nats));
    link.connect()
        .await
        .map_err(|e| BenchError::Experiment(e.to_string()))?;
    let remote = RemoteHandler::new(
        "h",
        local.clone(),
        link,
        lather_config::Fallback::Fault,
        options.timeout,
        lather_compose::limits(config),
    );
    let limits = lather_compose::limits(config);
    let envelope = Envelope::parse(body, &limits)
        .map_err(|f| BenchError::Experiment(format!("request: {}", f.reason())))?;
    let context = Context {
        id: 1,
        service: "bench".into(),
        action: None,
        client: Some(std::net::Ipv4Addr::LOCALHOST.into()),
        direction: Direction::Request,
        request: None,
        properties: Default::default(),
    };
    let size = envelope.as_bytes().len();
    let message = Message::new(envelope, context);
    let mut samples = Samples {
        local: Vec::with_capacity(args.calls),
        remote: Vec::with_capacity(args.calls),
        handler: Vec::with_capacity(args.calls),
        transfer: Vec::with_capacity(args.calls),
        overhead: Vec::with_capacity(args.calls),
        at_worker: Vec::with_capacity(args.calls),
        floor_here: Vec::with_capacity(args.calls),
        floor: Vec::with_capacity(args.calls),
    };
    let floor_here = Floor::start(nats).await?;
    let (_responder, floor) = Floor::in_process_of_its_own(nats).await?;
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    for i in 0..args.warmup + args.calls {
        let started = Instant::now();
        let _ = local.call(&message).await;
        let local_time = started.elapsed();
        let (verdict, split) = remote.call_split(&message).await;
        let floor_here_time = floor_here.round_trip(size).await?;
        let floor_time = floor.round_trip(size).await?;
        let Some(CallSplit {
            handler,
            transfer,
            overhead,
            at_worker,
        }) = split
        else {
            return Err(BenchError::Experiment(format!(
                "the remote call was not answered by a worker: {verdict:?}"
            )));
        };
        if i >= args.warmup {
            samples.local.push(us(local_time));
            samples.remote.push(us(handler + transfer + overhead));
            samples.handler.push(us(handler));
            samples.transfer.push(us(transfer));
            samples.overhead.push(us(overhead));
            samples.at_worker.push(us(at_worker));
            samples.floor_here.push(us(floor_here_time));
            samples.floor.push(us(floor_time));
        }
    }
    Ok(samples)
}

/// A responder that answers every request at once with its payload, and a client of its
/// own to call it: NATS's own round trip, nothing of lather's in it.
struct Floor {
    client: async_nats::Client,
    subject: String,
    _task: Option<tokio::task::JoinHandle<()>>,
}

/// Connects to `nats` with the same TLS and authentication as the link's.
async fn connect(nats: &lather_config::NatsConfig) -> Result<async_nats::Client, BenchError> {
    let url = nats.url.get_ref().as_str();
    lather_remote::connect_options(nats)
        .map_err(|e| BenchError::Experiment(e.to_string()))?
        .connect(url)
        .await
        .map_err(|e| BenchError::Experiment(format!("NATS at {url}: {e}")))
}

/// The `lather-bench nats-echo` process, killed and reaped when dropped.
struct Responder(std::process::Child);

impl Drop for Responder {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Floor {
    /// A responder task in this process, on a connection of its own.
    async fn start(nats: &lather_config::NatsConfig) -> Result<Floor, BenchError> {
        let responder = connect(nats).await?;
        let subject = format!("{}.bench.floor", nats.subject_prefix);
        let requests = crate::nats_echo::subscribe(&responder, &subject, None).await?;
        let task = tokio::spawn(async move {
            let _ = crate::nats_echo::echo_each(&responder, requests).await;
        });
        Ok(Floor {
            client: connect(nats).await?,
            subject,
            _task: Some(task),
        })
    }

    /// A responder in a process of its own (`lather-bench nats-echo`, on a single-thread
    /// runtime), answering once it has subscribed. Plain connections only: the responder
    /// takes just the URL.
    async fn in_process_of_its_own(
        nats: &lather_config::NatsConfig,
    ) -> Result<(Responder, Floor), BenchError> {
        let url = nats.url.get_ref().as_str();
        let subject = format!("{}.bench.floor.{}", nats.subject_prefix, std::process::id());
        let exe = std::env::current_exe()
            .map_err(|e| BenchError::Experiment(format!("cannot find this program: {e}")))?;
        let child = std::process::Command::new(exe)
            .args([
                "--log-level",
                "warn",
                "nats-echo",
                "--nats",
                url,
                "--subject",
            ])
            .arg(&subject)
            .stdin(std::process::Stdio::null())
            .spawn()
            .map_err(|e| BenchError::Experiment(format!("cannot start nats-echo: {e}")))?;
        let responder = Responder(child);
        let floor = Floor {
            client: connect(nats).await?,
            subject,
            _task: None,
        };
        for _ in 0..100 {
            if floor.round_trip(16).await.is_ok() {
                return Ok((responder, floor));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Err(BenchError::Experiment(
            "the nats-echo responder did not answer within 5 s".into(),
        ))
    }

    async fn round_trip(&self, size: usize) -> Result<Duration, BenchError> {
        let payload = bytes::Bytes::from(vec![b'x'; size]);
        let started = Instant::now();
        self.client
            .request(self.subject.clone(), payload)
            .await
            .map_err(|e| BenchError::Experiment(format!("NATS floor request: {e}")))?;
        Ok(started.elapsed())
    }
}

/// The `q`-quantile (0..=1) of `values` (sorted here), nearest rank.
fn quantile(values: &mut [f64], q: f64) -> f64 {
    values.sort_by(f64::total_cmp);
    let rank = ((q * values.len() as f64).ceil() as usize).clamp(1, values.len());
    values[rank - 1]
}

fn mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len() as f64
}

fn table(args: &RemoteCallArgs, size: usize, s: &Samples) -> String {
    let mut md = format!(
        "### One remote handler call (`{}`, {size}-byte SOAP 1.1 message, {} calls each, {} cores)\n\n\
         | | p50 µs | p99 µs | mean µs |\n| --- | ---: | ---: | ---: |\n",
        args.handler.replace('"', "'"),
        args.calls,
        super::cores()
    );
    let mut row = |name: &str, values: &[f64]| {
        let mut v = values.to_vec();
        let _ = writeln!(
            md,
            "| {name} | {:.1} | {:.1} | {:.1} |",
            quantile(&mut v, 0.5),
            quantile(&mut v, 0.99),
            mean(&v)
        );
    };
    row("in process", &s.local);
    row("on a worker, W", &s.remote);
    row("— Tcomp: the handler on the worker", &s.handler);
    row("— Tt: to the worker and back through NATS", &s.transfer);
    row("— C: framing, rebuilding, verdict", &s.overhead);
    row(
        "— — of C, on the worker (decoding, rebuilding, framing the answer)",
        &s.at_worker,
    );
    row(
        "bare NATS request/reply, same size, answered in this process",
        &s.floor_here,
    );
    row(
        "bare NATS request/reply, same size, answered by another process (floor of W)",
        &s.floor,
    );
    let extra: Vec<f64> = s.remote.iter().zip(&s.local).map(|(r, l)| r - l).collect();
    row("remote overhead, W − in process (per pair)", &extra);
    let own: Vec<f64> = s.remote.iter().zip(&s.floor).map(|(w, f)| w - f).collect();
    row("lather's own part, W − the floor of W (per pair)", &own);
    md
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_are_nearest_rank() {
        let mut v: Vec<f64> = (1..=100).map(f64::from).collect();
        v.reverse();
        assert_eq!(quantile(&mut v, 0.5), 50.0);
        assert_eq!(quantile(&mut v, 0.99), 99.0);
        assert_eq!(quantile(&mut v, 1.0), 100.0);
        assert_eq!(quantile(&mut [7.0], 0.5), 7.0);
    }
}
