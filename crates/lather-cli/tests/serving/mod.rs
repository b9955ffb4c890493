//! What the tests that start `lather serve` as a child share: the binary, `lather check` on
//! a configuration's text, a free port, a child killed on drop, and waiting until it
//! answers `/health`. Scratch files go in a [`ScratchDir`] the test keeps until its child
//! has stopped.

#![allow(dead_code, reason = "each test file uses its own part of the harness")]

use lather_test_util::ScratchDir;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Output};
use std::time::{Duration, Instant};

/// The `lather` binary under test.
pub(crate) fn lather() -> Command {
    Command::new(env!("CARGO_BIN_EXE_lather"))
}

/// `lather check --config` on `text`, written as `name` in a scratch directory removed once
/// the command has run.
pub(crate) fn check_text(name: &str, text: &str) -> Output {
    let dir = ScratchDir::new("check");
    lather()
        .args(["check", "--config"])
        .arg(dir.write(name, text))
        .output()
        .expect("run lather")
}

/// A loopback port free at the time of the call.
pub(crate) use lather_test_util::free_port;

/// A child process killed (by its own handle) if it still runs when dropped.
pub(crate) struct Running(pub(crate) Child);

impl Drop for Running {
    fn drop(&mut self) {
        if self.0.try_wait().ok().flatten().is_none() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

/// A `GET path` on a fresh connection; the whole answer, or `None` if it failed.
pub(crate) fn http_get(port: u16, path: &str) -> Option<String> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    s.write_all(format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes())
        .ok()?;
    let mut text = String::new();
    s.read_to_string(&mut text).ok()?;
    Some(text)
}

/// Waits (up to 20 s) until the child answers `/health` with 200 on `port`; panics if it
/// exits first.
pub(crate) fn wait_healthy(port: u16, child: &mut Child) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        if let Some(status) = child.try_wait().unwrap() {
            panic!("lather exited early: {status}");
        }
        if http_get(port, "/health").is_some_and(|t| t.starts_with("HTTP/1.1 200")) {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("lather did not become healthy");
}
