//! A TCP proxy that holds every chunk it forwards for a fixed time in each direction: the
//! propagation delay of a network link, made in user space where the kernel has no
//! `netem` qdisc (`lather-bench delay-proxy`).
//!
//! Each accepted connection gets its own connection to the target and, per direction, a
//! reader thread that stamps each chunk with the time it was read and a writer thread
//! that sends it once `delay` has passed (a short busy wait makes the last microseconds
//! precise). Bytes keep their order; an end of stream is passed on after the bytes before
//! it. When a connection closes, how late its chunks left is written to stderr.

mod direction;
mod precise_sleep;

use crate::BenchError;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::Duration;

/// Arguments of `lather-bench delay-proxy`.
#[derive(Debug, Clone, clap::Args)]
pub struct DelayProxyArgs {
    /// Address to accept connections on, e.g. 127.0.0.1:4222
    #[arg(long, value_name = "ADDR")]
    pub listen: SocketAddr,
    /// Where each accepted connection is forwarded to, e.g. 10.200.0.1:4222
    #[arg(long, value_name = "ADDR")]
    pub to: String,
    /// How long each chunk is held, in each direction, in microseconds
    #[arg(long, value_name = "N", default_value_t = 100)]
    pub delay_us: u64,
    /// The link's bandwidth in kbit/s, each direction (default: unlimited); e.g. 14.4 for
    /// the 14.4 kbit/s link of a mobile client
    #[arg(long, value_name = "KBPS")]
    pub rate_kbps: Option<f64>,
    /// Do not report each closed connection on stderr
    #[arg(long)]
    pub quiet: bool,
    /// Sleep only, without the busy wait that makes the last microseconds precise: late by
    /// the kernel's timer slack (~50–100 µs), which matters little for millisecond delays,
    /// and cheap enough for many connections
    #[arg(long)]
    pub coarse: bool,
}

/// Runs the proxy until the process is stopped.
pub fn run(args: &DelayProxyArgs) -> Result<(), BenchError> {
    let mut proxy = DelayProxy::bind(
        args.listen,
        args.to.clone(),
        Duration::from_micros(args.delay_us),
    )?;
    if args.coarse {
        proxy = proxy.coarse();
    }
    if let Some(kbps) = args.rate_kbps {
        if !(kbps.is_finite() && kbps > 0.0) {
            return Err(BenchError::Experiment(format!(
                "--rate-kbps must be a positive number, got {kbps}"
            )));
        }
        proxy = proxy.rate_bps((kbps * 1000.0).round() as u64);
    }
    eprintln!(
        "delay-proxy: {} -> {}, {} µs each way{}",
        proxy.local_addr(),
        args.to,
        args.delay_us,
        args.rate_kbps
            .map_or_else(String::new, |k| format!(", {k} kbit/s"))
    );
    proxy.serve(!args.quiet)
}

/// A bound delaying proxy.
#[derive(Debug)]
pub struct DelayProxy {
    listener: TcpListener,
    to: String,
    link: direction::Link,
}

impl DelayProxy {
    /// Binds `listen`; connections will be forwarded to `to` with `delay` each way.
    pub fn bind(listen: SocketAddr, to: String, delay: Duration) -> Result<DelayProxy, BenchError> {
        let listener = TcpListener::bind(listen)
            .map_err(|e| BenchError::Experiment(format!("cannot listen on {listen}: {e}")))?;
        Ok(DelayProxy {
            listener,
            to,
            link: direction::Link {
                delay,
                spin: precise_sleep::SPIN,
                rate_bps: None,
            },
        })
    }

    /// Sleeps without the final busy wait (see `--coarse`).
    pub fn coarse(mut self) -> DelayProxy {
        self.link.spin = Duration::ZERO;
        self
    }

    /// Limits each direction to `bps` bits per second: a chunk waits for the ones before it
    /// to be sent, then takes its size × 8 / `bps` to be sent, then the delay.
    pub fn rate_bps(mut self, bps: u64) -> DelayProxy {
        self.link.rate_bps = Some(bps.max(1));
        self
    }

    /// The address it accepts on (the real port when bound to port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.listener
            .local_addr()
            .unwrap_or_else(|_| SocketAddr::from(([0, 0, 0, 0], 0)))
    }

    /// Accepts connections and relays each on its own threads; returns only when
    /// accepting fails. With `report`, each closed connection's figures go to stderr.
    pub fn serve(self, report: bool) -> Result<(), BenchError> {
        let mut id = 0u64;
        loop {
            let (client, peer) = self
                .listener
                .accept()
                .map_err(|e| BenchError::Experiment(format!("accept failed: {e}")))?;
            id += 1;
            let to = self.to.clone();
            let link = self.link;
            let spawned = std::thread::Builder::new()
                .name("delay-conn".into())
                .spawn(move || match relay(client, &to, link) {
                    Ok(line) if report => {
                        eprintln!("delay-proxy: connection {id} from {peer}: {line}")
                    }
                    Ok(_) => {}
                    Err(e) => eprintln!("delay-proxy: connection {id} from {peer}: {e}"),
                });
            if let Err(e) = spawned {
                eprintln!("delay-proxy: cannot start a thread for connection {id}: {e}");
            }
        }
    }
}

/// Relays one connection until both directions have ended; describes what it forwarded.
fn relay(client: TcpStream, to: &str, link: direction::Link) -> std::io::Result<String> {
    let server = TcpStream::connect(to)?;
    client.set_nodelay(true)?;
    server.set_nodelay(true)?;
    let up = direction::forward(client.try_clone()?, server.try_clone()?, link)?;
    let down = direction::forward(server, client, link)?;
    let join = |h: std::thread::JoinHandle<direction::DirectionSummary>| {
        h.join()
            .map_err(|_| std::io::Error::other("a relay thread panicked"))
    };
    let (up, down) = (join(up)?, join(down)?);
    let describe = |s: &direction::DirectionSummary| {
        let l = &s.lateness_us;
        format!(
            "{} chunks, {} bytes, late by p50 {} / p99 {} / max {} µs",
            s.chunks,
            s.bytes,
            l.value_at_quantile(0.5),
            l.value_at_quantile(0.99),
            l.max()
        )
    };
    Ok(format!("up {}; down {}", describe(&up), describe(&down)))
}

#[cfg(test)]
mod tests;
