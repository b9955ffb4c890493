//! An asynchronous request survives a restart: lather accepts it (202), cannot reach the
//! ReplyTo, is stopped with SIGTERM, and once started again on the same `async_store`
//! delivers the answer with its RelatesTo when the ReplyTo listens.

use crate::serving;

use lather_test_util::ScratchDir;
use serving::{Running, free_port, lather, wait_healthy};

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const WSA: &str = "http://www.w3.org/2005/08/addressing";

fn start(config: &std::path::Path, port: u16) -> Running {
    let child = lather()
        .args(["serve", "--config", config.to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut running = Running(child);
    wait_healthy(port, &mut running.0);
    running
}

fn stop(running: &mut Running) {
    let status = Command::new("kill")
        .args(["-TERM", &running.0.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(status) = running.0.try_wait().unwrap() {
            assert_eq!(status.code(), Some(0));
            return;
        }
        assert!(Instant::now() < deadline, "lather did not exit");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn an_accepted_request_is_answered_after_a_restart() {
    let port = free_port();
    let sink_port = free_port();
    let dir = ScratchDir::new("async-restart");
    let store = dir.join("jobs.redb");
    let config = dir.write(
        "lather.toml",
        format!(
            "[server]\nlisten = \"127.0.0.1:{port}\"\nshutdown_grace_ms = 1000\n\n\
             [[service]]\nname = \"echo\"\npath = \"/echo\"\nbuiltin = \"echo\"\n\
             async_replies = true\nasync_store = \"{}\"\nreply_allow = [\"127.0.0.1\"]\nreply_attempts = 100\n",
            store.display()
        ),
    );
    let mut first = start(&config, port);
    let body = format!(
        r#"<s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope" xmlns:a="{WSA}"><s:Header><a:MessageID>urn:uuid:restart-1</a:MessageID><a:ReplyTo><a:Address>http://127.0.0.1:{sink_port}/r</a:Address></a:ReplyTo></s:Header><s:Body><ns:echo xmlns:ns="urn:lather:echo"><text>survived</text></ns:echo></s:Body></s:Envelope>"#
    );
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/soap+xml; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 202"), "{answer}");
    // Delivery fails (nothing listens); the answer waits in the store.
    std::thread::sleep(Duration::from_millis(600));
    stop(&mut first);
    let sink = TcpListener::bind(("127.0.0.1", sink_port)).unwrap();
    let mut second = start(&config, port);
    sink.set_nonblocking(false).unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let (mut stream, _) = sink.accept().unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        while let Ok(n) = stream.read(&mut buf) {
            if n == 0 {
                break;
            }
            got.extend_from_slice(&buf[..n]);
            if String::from_utf8_lossy(&got).contains("Envelope>") {
                break;
            }
        }
        let _ = stream.write_all(b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n");
        let _ = tx.send(String::from_utf8_lossy(&got).into_owned());
    });
    let delivered = rx
        .recv_timeout(Duration::from_secs(20))
        .expect("the answer after the restart");
    assert!(delivered.starts_with("POST /r HTTP/1.1"), "{delivered}");
    assert!(delivered.contains("<text>survived</text>"), "{delivered}");
    assert!(
        delivered.contains("urn:uuid:restart-1</wsa:RelatesTo>"),
        "{delivered}"
    );
    stop(&mut second);
}
