//! What the interoperability tests share: a child process ended with the test, the JSON
//! lines a peer prints, `lather serve` with one event source, and publishing to it.

#![allow(
    dead_code,
    reason = "each interop test file uses its own part of the harness"
)]

use lather_test_util::ScratchDir;
use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// A child process killed (by its own handle) when dropped.
pub(crate) struct Running(pub(crate) Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The JSON objects a peer prints on `stdout`, one a line, as a channel (a line that is
/// not JSON is shown on stderr and skipped).
pub(crate) fn json_lines(stdout: ChildStdout) -> mpsc::Receiver<Value> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { return };
            match serde_json::from_str(&line) {
                Ok(v) => {
                    if tx.send(v).is_err() {
                        return;
                    }
                }
                Err(e) => eprintln!("peer printed a non-JSON line ({e}): {line}"),
            }
        }
    });
    rx
}

/// The peer's next line within `wait`; a line with an `error` key fails the test.
pub(crate) fn next_line(
    rx: &mpsc::Receiver<Value>,
    peer: &str,
    what: &str,
    wait: Duration,
) -> Value {
    let v = rx
        .recv_timeout(wait)
        .unwrap_or_else(|e| panic!("no {what} line from the {peer} peer: {e}"));
    assert!(v.get("error").is_none(), "the {peer} peer failed: {v}");
    v
}

pub(crate) fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `lather serve` started by [`serve_event_source`]: when dropped, the process is killed,
/// then the directory of its configuration removed.
pub(crate) struct Served {
    _lather: Running,
    _dir: ScratchDir,
}

/// `lather serve` with one event source at /events; returns it and its port. `name` names
/// its configuration's scratch directory.
pub(crate) fn serve_event_source(name: &str) -> (Served, u16) {
    let port = free_port();
    let dir = ScratchDir::new(name);
    let config = dir.write(
        "events.toml",
        format!(
            "[server]\nlisten = \"127.0.0.1:{port}\"\n[[service]]\nname = \"events\"\npath = \"/events\"\nbuiltin = \"event-source\"\nnotify_allow = [\"127.0.0.1\"]\nmax_expires_s = 900\n"
        ),
    );
    let child = Command::new(env!("CARGO_BIN_EXE_lather"))
        .args(["serve", "--config"])
        .arg(&config)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start lather serve");
    let running = Running(child);
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if TcpStream::connect(("127.0.0.1", port)).is_ok() {
            let served = Served {
                _lather: running,
                _dir: dir,
            };
            return (served, port);
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    panic!("lather serve did not listen on {port}");
}

/// Publishes `event` with `action` at lather's `/events/publish`; returns how many
/// notifications were queued.
pub(crate) fn publish(port: u16, action: &str, event: &str) -> usize {
    let body = format!(
        r#"<s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope" xmlns:wsa="http://www.w3.org/2005/08/addressing"><s:Header><wsa:Action>{action}</wsa:Action></s:Header><s:Body>{event}</s:Body></s:Envelope>"#
    );
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(
        stream,
        "POST /events/publish HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/soap+xml; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    let at = answer.find("queued=\"").expect("a queued count") + 8;
    answer[at..at + answer[at..].find('"').unwrap()]
        .parse()
        .unwrap()
}
