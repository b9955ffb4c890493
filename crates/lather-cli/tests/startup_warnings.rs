//! `lather serve` warns at start about what it exposes: a listener on every interface and
//! a key file every user of the host can read.

use lather_test_util::ScratchDir;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[test]
fn an_exposed_listener_and_a_world_readable_key_are_warned_about() {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dir = ScratchDir::new("warn");
    let key = dir.join("aes.key");
    std::fs::write(&key, "00112233445566778899aabbccddeeff\n").unwrap();
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).unwrap();
    let path = dir.join("exposed.toml");
    std::fs::write(
        &path,
        format!(
            "[server]\nlisten = \"0.0.0.0:{port}\"\n[handlers.dec]\nkind = \"decrypt\"\nkey_file = \"{}\"\n\
             [[service]]\nname = \"echo\"\npath = \"/echo\"\nbuiltin = \"echo\"\nrequest = [[\"dec\"]]\n",
            key.display()
        ),
    )
    .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_lather"))
        .args([
            "serve",
            "--config",
            path.to_str().unwrap(),
            "--log-level",
            "warn",
        ])
        .env("NO_COLOR", "1")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        assert!(child.try_wait().unwrap().is_none(), "lather exited early");
        if let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) {
            let _ = s.write_all(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
            let mut text = String::new();
            let _ = s.read_to_string(&mut text);
            if text.starts_with("HTTP/1.1 200") {
                break;
            }
        }
        assert!(Instant::now() < deadline, "lather did not become healthy");
        std::thread::sleep(Duration::from_millis(50));
    }
    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    assert_eq!(child.wait().unwrap().code(), Some(0));
    let mut log = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut log)
        .unwrap();
    assert!(log.contains("listening on every interface"), "{log}");
    assert!(
        log.contains("a secret file is readable by every user") && log.contains("aes.key"),
        "{log}"
    );
}
