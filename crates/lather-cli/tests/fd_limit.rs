//! `lather serve` with a low descriptor limit (`prlimit --nofile`): `max_connections` is
//! lowered to fit at start, with a warning, and connections beyond it are closed at once
//! instead of exhausting descriptors.

use crate::serving;

use lather_test_util::ScratchDir;
use serving::free_port;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[test]
fn a_low_descriptor_limit_lowers_max_connections() {
    if Command::new("prlimit").arg("--version").output().is_err() {
        panic!("this test needs prlimit (util-linux)");
    }
    let port = free_port();
    let dir = ScratchDir::new("fd");
    let path = dir.join("fd.toml");
    std::fs::write(
        &path,
        format!(
            "[server]\nlisten = \"127.0.0.1:{port}\"\nidle_timeout_ms = 60000\n[[service]]\nname = \"echo\"\npath = \"/echo\"\nbuiltin = \"echo\"\n"
        ),
    )
    .unwrap();
    // 128 descriptors: the default cap of 10 000 is lowered to 128 - 64 = 64.
    let mut child = Command::new("prlimit")
        .args(["--nofile=128:128", "--"])
        .arg(env!("CARGO_BIN_EXE_lather"))
        .args([
            "serve",
            "--config",
            path.to_str().unwrap(),
            "--log-level",
            "warn",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut held = Vec::new();
    while held.is_empty() {
        assert!(child.try_wait().unwrap().is_none(), "lather exited early");
        if let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) {
            s.write_all(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
                .unwrap();
            s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            let mut buf = [0u8; 12];
            if s.read_exact(&mut buf).is_ok() && &buf == b"HTTP/1.1 200" {
                held.push(s);
            }
        }
        assert!(Instant::now() < deadline, "lather did not become healthy");
        std::thread::sleep(Duration::from_millis(50));
    }
    // The health connection holds one place; 80 more are opened.
    for _ in 0..80 {
        held.push(TcpStream::connect(("127.0.0.1", port)).unwrap());
    }
    let mut closed = 0;
    for s in &mut held[1..] {
        s.set_read_timeout(Some(Duration::from_millis(100)))
            .unwrap();
        let mut buf = [0u8; 1];
        // EOF or reset: closed by the server; a timeout: held open.
        match s.read(&mut buf) {
            Ok(0) => closed += 1,
            Err(e)
                if e.kind() != std::io::ErrorKind::WouldBlock
                    && e.kind() != std::io::ErrorKind::TimedOut =>
            {
                closed += 1
            }
            _ => {}
        }
    }
    assert_eq!(
        closed,
        80 - 63,
        "64 places: the health connection and 63 more"
    );
    assert!(child.try_wait().unwrap().is_none(), "lather exited");
    let _ = child.kill();
    let _ = child.wait();
    let mut log = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut log)
        .unwrap();
    let log = without_colours(&log);
    assert!(
        log.contains("lowering it") && log.contains("lowered_to=64"),
        "{log}"
    );
}

/// The text without ANSI colour sequences (`ESC [ … m`).
fn without_colours(text: &str) -> String {
    let mut out = String::new();
    let mut in_escape = false;
    for c in text.chars() {
        match (in_escape, c) {
            (false, '\u{1b}') => in_escape = true,
            (false, c) => out.push(c),
            (true, 'm') => in_escape = false,
            (true, _) => {}
        }
    }
    out
}
