//! `lather serve` under signals and hostile command lines: SIGHUP is logged and ignored
//! (a request in flight completes), `--config` refuses devices and oversized files.

mod serving;

use serving::{Running, free_port, http_get, lather, temp_config, wait_healthy};

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

#[test]
fn sighup_is_ignored_and_a_request_in_flight_completes() {
    let (backend, arrived, release) = held_backend();
    let port = free_port();
    let path = temp_config(
        "signals",
        "hup.toml",
        &format!(
            "[server]\nlisten = \"127.0.0.1:{port}\"\n[[service]]\nname = \"gw\"\npath = \"/gw\"\nupstream = [\"http://127.0.0.1:{backend}/ws\"]\n"
        ),
    );
    let child = lather()
        .args([
            "serve",
            "--config",
            path.to_str().unwrap(),
            "--log-level",
            "info",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut running = Running(child);
    wait_healthy(port, &mut running.0);
    // A request in flight: the backend holds it.
    let client = std::thread::spawn(move || {
        let body = "<s:Envelope xmlns:s=\"http://schemas.xmlsoap.org/soap/envelope/\"><s:Body><x/></s:Body></s:Envelope>";
        let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        write!(
            s,
            "POST /gw HTTP/1.1\r\nHost: x\r\nContent-Type: text/xml; charset=utf-8\r\nSOAPAction: \"\"\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let mut text = String::new();
        let _ = s.read_to_string(&mut text);
        text
    });
    arrived
        .recv_timeout(Duration::from_secs(10))
        .expect("the request reached the backend");
    signal(&running.0, "-HUP");
    // Still serving after SIGHUP.
    std::thread::sleep(Duration::from_millis(200));
    assert!(
        running.0.try_wait().unwrap().is_none(),
        "lather exited on SIGHUP"
    );
    let health = http_get(port, "/health").unwrap_or_default();
    assert!(health.starts_with("HTTP/1.1 200"), "{health}");
    // The request in flight completes.
    release.send(()).unwrap();
    let answer = client.join().unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.contains("<done/>"), "{answer}");
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
    let mut log = String::new();
    running
        .0
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut log)
        .unwrap();
    assert!(
        log.contains("SIGHUP received; configuration reload is not supported yet, ignoring"),
        "{log}"
    );
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
    let big = temp_config("signals", "big.toml", &"#".repeat(2 * 1024 * 1024));
    let out = lather()
        .args(["check", "--config", big.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(78));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("larger than 1048576 bytes"), "{stderr}");
}
