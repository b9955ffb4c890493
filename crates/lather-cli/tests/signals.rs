//! `lather serve` under signals and hostile command lines: SIGHUP reloads the
//! configuration (connections stay open, a request in flight completes, a bad file is
//! refused), `--config` refuses devices and oversized files.

use crate::serving;

use lather_test_util::ScratchDir;
use serving::{Running, free_port, lather, wait_healthy};

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

fn signal(child: &Child, name: &str) {
    let status = Command::new("kill")
        .args([name, &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

const ANSWER: &str = "<s:Envelope xmlns:s=\"http://schemas.xmlsoap.org/soap/envelope/\"><s:Body><done/></s:Body></s:Envelope>";

/// A backend that takes one request, reports it, and answers only when told to.
fn held_backend() -> (u16, mpsc::Receiver<()>, mpsc::Sender<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (arrived_tx, arrived) = mpsc::channel();
    let (release, release_rx) = mpsc::channel::<()>();
    std::thread::spawn(move || {
        let Ok((mut stream, _)) = listener.accept() else {
            return;
        };
        stream
            .set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        let mut data = Vec::new();
        let mut buf = [0u8; 4096];
        // Read the head and a body of Content-Length bytes.
        loop {
            let n = stream.read(&mut buf).unwrap_or(0);
            if n == 0 {
                return;
            }
            data.extend_from_slice(&buf[..n]);
            let text = String::from_utf8_lossy(&data).to_ascii_lowercase();
            if let Some(end) = text.find("\r\n\r\n") {
                let length: usize = text[..end]
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length:"))
                    .map_or(0, |v| v.trim().parse().unwrap());
                if data.len() >= end + 4 + length {
                    break;
                }
            }
        }
        let _ = arrived_tx.send(());
        let _ = release_rx.recv_timeout(Duration::from_secs(20));
        let _ = write!(
            stream,
            "HTTP/1.1 200 OK\r\nContent-Type: text/xml; charset=utf-8\r\nContent-Length: {}\r\n\r\n{ANSWER}",
            ANSWER.len()
        );
    });
    (port, arrived, release)
}

/// Sends a SOAP request to `path` on the keep-alive connection `s`; the answer's status
/// line and body.
fn exchange(s: &mut TcpStream, path: &str) -> (String, String) {
    let body = "<s:Envelope xmlns:s=\"http://schemas.xmlsoap.org/soap/envelope/\"><s:Body><e:echo xmlns:e=\"urn:lather:echo\"><text>hi</text></e:echo></s:Body></s:Envelope>";
    write!(
        s,
        "POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: text/xml; charset=utf-8\r\nSOAPAction: \"\"\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut data = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        let n = s.read(&mut buf).unwrap();
        assert!(
            n > 0,
            "connection closed: {}",
            String::from_utf8_lossy(&data)
        );
        data.extend_from_slice(&buf[..n]);
        let text = String::from_utf8_lossy(&data).to_string();
        if let Some(end) = text.find("\r\n\r\n") {
            let length: usize = text[..end]
                .lines()
                .find_map(|l| {
                    l.to_ascii_lowercase()
                        .strip_prefix("content-length:")
                        .map(|v| v.trim().parse().unwrap())
                })
                .unwrap_or(0);
            if data.len() >= end + 4 + length {
                let status = text.lines().next().unwrap_or_default().to_owned();
                return (status, text[end + 4..].to_owned());
            }
        }
    }
}

fn wait_for_log(log: &mpsc::Receiver<String>, needle: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(15);
    let mut seen = String::new();
    while Instant::now() < deadline {
        if let Ok(line) = log.recv_timeout(Duration::from_millis(100)) {
            seen.push_str(&line);
            seen.push('\n');
            if line.contains(needle) {
                return seen;
            }
        }
    }
    panic!("no log line with {needle:?} in:\n{seen}");
}

#[test]
fn sighup_reloads_without_dropping_connections_or_requests_in_flight() {
    let (backend, arrived, release) = held_backend();
    let port = free_port();
    let gateway = format!(
        "[server]\nlisten = \"127.0.0.1:{port}\"\n[[service]]\nname = \"gw\"\npath = \"/gw\"\nupstream = [\"http://127.0.0.1:{backend}/ws\"]\n"
    );
    let dir = ScratchDir::new("signals");
    let path = dir.write("hup.toml", &gateway);
    let pid_file = path.with_extension("pid");
    let child = lather()
        .args([
            "serve",
            "--config",
            path.to_str().unwrap(),
            "--pid-file",
            pid_file.to_str().unwrap(),
            "--log-level",
            "info",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut running = Running(child);
    let stderr = running.0.stderr.take().unwrap();
    let (log_tx, log) = mpsc::channel();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stderr).lines() {
            let Ok(line) = line else { return };
            if log_tx.send(line).is_err() {
                return;
            }
        }
    });
    wait_healthy(port, &mut running.0);
    // No echo service yet (asked on a connection of its own: a server may close a
    // connection after refusing a request whose body it did not read).
    let mut once = TcpStream::connect(("127.0.0.1", port)).unwrap();
    once.set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let (status, _) = exchange(&mut once, "/echo");
    assert!(status.contains("404"), "{status}");
    // A keep-alive connection opened and used before the reload.
    let mut kept = TcpStream::connect(("127.0.0.1", port)).unwrap();
    kept.set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    write!(kept, "GET /health HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let mut head = [0u8; 512];
    let n = kept.read(&mut head).unwrap();
    assert!(
        head[..n].starts_with(b"HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&head[..n])
    );
    // A request in flight: the backend holds it.
    let client = std::thread::spawn(move || {
        let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        exchange(&mut s, "/gw")
    });
    arrived
        .recv_timeout(Duration::from_secs(10))
        .expect("the request reached the backend");
    // The new configuration adds an echo service.
    std::fs::write(
        &path,
        format!("{gateway}[[service]]\nname = \"echo\"\npath = \"/echo\"\nbuiltin = \"echo\"\n"),
    )
    .unwrap();
    // `lather reload` checks the file, then signals the process in the pid file.
    let asked = lather()
        .args([
            "reload",
            "--pid-file",
            pid_file.to_str().unwrap(),
            "--config",
            path.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(asked.status.code(), Some(0), "{asked:?}");
    wait_for_log(&log, "configuration reloaded");
    // The same connection sees the new service.
    let (status, body) = exchange(&mut kept, "/echo");
    assert!(status.contains("200"), "{status} {body}");
    assert!(body.contains("hi"), "{body}");
    // The request in flight completes on the service it started on.
    release.send(()).unwrap();
    let (status, body) = client.join().unwrap();
    assert!(status.contains("200"), "{status}");
    assert!(body.contains("<done/>"), "{body}");
    // A file that does not validate: `lather reload` reports it and signals nothing…
    std::fs::write(&path, "[server]\nlisten = 3\n").unwrap();
    let asked = lather()
        .args([
            "reload",
            "--pid-file",
            pid_file.to_str().unwrap(),
            "--config",
            path.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(asked.status.code(), Some(78), "{asked:?}");
    // …and a SIGHUP with it is refused; the server goes on as it was.
    signal(&running.0, "-HUP");
    let seen = wait_for_log(&log, "reload refused");
    assert!(seen.contains("does not validate"), "{seen}");
    let (status, _) = exchange(&mut kept, "/echo");
    assert!(status.contains("200"), "{status}");
    signal(&running.0, "-TERM");
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = running.0.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "lather did not exit");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(0));
    assert!(!pid_file.exists(), "the pid file is removed at exit");
}

#[test]
fn config_must_be_a_bounded_regular_file() {
    for command in ["check", "serve"] {
        let out = lather()
            .args([command, "--config", "/dev/zero"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(78));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("/dev/zero") && stderr.contains("not a regular file"),
            "{stderr}"
        );
    }
    let dir = ScratchDir::new("signals");
    let big = dir.write("big.toml", "#".repeat(2 * 1024 * 1024));
    let out = lather()
        .args(["check", "--config", big.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(78));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("larger than 1048576 bytes"), "{stderr}");
}
