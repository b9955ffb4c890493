//! The round trip to a NATS server over one TCP connection, measured with the protocol's
//! own `PING`/`PONG` (`lather-bench nats-rtt`): what a network path between a process and
//! NATS adds, with nothing of lather's in it.

use crate::BenchError;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// Arguments of `lather-bench nats-rtt`.
#[derive(Debug, Clone, clap::Args)]
pub struct NatsRttArgs {
    /// The NATS server, `nats://HOST:PORT` or `HOST:PORT`
    #[arg(long, value_name = "URL")]
    pub nats: String,
    /// Measured round trips
    #[arg(long, default_value_t = 1000)]
    pub count: usize,
    /// Round trips made before measuring
    #[arg(long, default_value_t = 100)]
    pub warmup: usize,
}

/// Measures and prints one line: `rtt_us min=… p50=… p90=… p99=… max=… mean=… count=…`.
pub fn run(args: &NatsRttArgs) -> Result<(), BenchError> {
    if args.count == 0 {
        return Err(BenchError::InvalidArgument(
            "--count must be positive".into(),
        ));
    }
    let mut samples = probe(&args.nats, args.warmup, args.count)?;
    samples.sort_by(f64::total_cmp);
    let at =
        |q: f64| samples[((q * samples.len() as f64).ceil() as usize).clamp(1, samples.len()) - 1];
    println!(
        "rtt_us min={:.1} p50={:.1} p90={:.1} p99={:.1} max={:.1} mean={:.1} count={}",
        samples[0],
        at(0.5),
        at(0.9),
        at(0.99),
        samples[samples.len() - 1],
        samples.iter().sum::<f64>() / samples.len() as f64,
        samples.len()
    );
    Ok(())
}

/// `count` PING→PONG round trips (after `warmup` unmeasured ones), in microseconds.
pub fn probe(url: &str, warmup: usize, count: usize) -> Result<Vec<f64>, BenchError> {
    let addr = url.strip_prefix("nats://").unwrap_or(url);
    let fail = |what: &str, e: std::io::Error| {
        BenchError::Experiment(format!("NATS at {addr}: {what}: {e}"))
    };
    let stream = TcpStream::connect(addr).map_err(|e| fail("cannot connect", e))?;
    stream
        .set_nodelay(true)
        .map_err(|e| fail("set_nodelay", e))?;
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .map_err(|e| fail("set_read_timeout", e))?;
    let mut writer = stream.try_clone().map_err(|e| fail("try_clone", e))?;
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader
        .read_line(&mut line)
        .map_err(|e| fail("no INFO", e))?;
    if !line.starts_with("INFO ") {
        return Err(BenchError::Experiment(format!(
            "NATS at {addr}: expected INFO, got {:?}",
            line.trim_end()
        )));
    }
    writer
        .write_all(b"CONNECT {\"verbose\":false,\"pedantic\":false}\r\n")
        .map_err(|e| fail("CONNECT", e))?;
    let mut samples = Vec::with_capacity(count);
    for i in 0..warmup + count {
        let started = Instant::now();
        writer.write_all(b"PING\r\n").map_err(|e| fail("PING", e))?;
        wait_for_pong(&mut reader, &mut writer, addr)?;
        if i >= warmup {
            samples.push(started.elapsed().as_secs_f64() * 1e6);
        }
    }
    Ok(samples)
}

/// Reads lines until `PONG`, answering the server's own `PING`s; `-ERR` is an error.
fn wait_for_pong(
    reader: &mut BufReader<TcpStream>,
    writer: &mut TcpStream,
    addr: &str,
) -> Result<(), BenchError> {
    let mut line = String::new();
    loop {
        line.clear();
        let n = reader
            .read_line(&mut line)
            .map_err(|e| BenchError::Experiment(format!("NATS at {addr}: no PONG: {e}")))?;
        match line.trim_end() {
            _ if n == 0 => {
                return Err(BenchError::Experiment(format!(
                    "NATS at {addr}: closed before PONG"
                )));
            }
            "PONG" => return Ok(()),
            "PING" => writer
                .write_all(b"PONG\r\n")
                .map_err(|e| BenchError::Experiment(format!("NATS at {addr}: PONG: {e}")))?,
            err if err.starts_with("-ERR") => {
                return Err(BenchError::Experiment(format!("NATS at {addr}: {err}")));
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    /// A stand-in server: INFO, then a PONG per PING (one of its own PINGs first, and a
    /// `+OK` line, which the probe must step over).
    fn fake_nats() -> String {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        std::thread::spawn(move || {
            let (conn, _) = listener.accept().unwrap();
            let mut out = conn.try_clone().unwrap();
            out.write_all(b"INFO {\"server_id\":\"x\"}\r\n").unwrap();
            let mut lines = BufReader::new(conn);
            let mut line = String::new();
            lines.read_line(&mut line).unwrap();
            assert!(line.starts_with("CONNECT {"), "{line:?}");
            out.write_all(b"PING\r\n").unwrap();
            loop {
                line.clear();
                if lines.read_line(&mut line).unwrap() == 0 {
                    return;
                }
                match line.as_str() {
                    "PING\r\n" => out.write_all(b"+OK\r\nPONG\r\n").unwrap(),
                    "PONG\r\n" => {}
                    other => panic!("unexpected {other:?}"),
                }
            }
        });
        format!("nats://{addr}")
    }

    #[test]
    fn counts_the_measured_round_trips_only() {
        let samples = probe(&fake_nats(), 3, 25).unwrap();
        assert_eq!(samples.len(), 25);
        assert!(samples.iter().all(|&us| us > 0.0));
    }

    #[test]
    fn a_server_that_is_not_nats_is_refused() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        std::thread::spawn(move || {
            let (mut conn, _) = listener.accept().unwrap();
            conn.write_all(b"HTTP/1.1 400 Bad Request\r\n").unwrap();
        });
        let err = probe(&addr.to_string(), 0, 1).unwrap_err().to_string();
        assert!(err.contains("expected INFO"), "{err}");
    }
}
