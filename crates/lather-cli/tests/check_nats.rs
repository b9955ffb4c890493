//! `lather check` on `[nats]` TLS and authentication: the method and whether TLS is on are
//! printed, the secret never; an unreadable file is an error naming the file and the line.

use lather_test_util::ScratchDir;
use std::path::Path;
use std::process::{Command, Output};

fn check(dir: &Path, name: &str, text: &str) -> Output {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    Command::new(env!("CARGO_BIN_EXE_lather"))
        .args(["check", "--config", path.to_str().unwrap()])
        .env("LATHER_TEST_NATS_PASSWORD", "very-secret-pw")
        .output()
        .expect("run lather")
}

#[test]
fn the_method_and_tls_are_printed_and_the_secret_is_not() {
    let dir = ScratchDir::new("check-nats");
    let ca = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    let ca_path = dir.join("nats-ca.pem");
    std::fs::write(&ca_path, ca.cert.pem()).unwrap();
    let ca_path = ca_path.display().to_string();
    let out = check(
        &dir,
        "user.toml",
        &format!(
            "[nats]\nurl = \"tls://nats.example:4222\"\ntls_ca_file = {ca_path:?}\n\
             user = \"lather\"\npassword = \"${{LATHER_TEST_NATS_PASSWORD}}\"\n"
        ),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}{stderr}");
    let expected = format!(
        "nats: tls://nats.example:4222; TLS required (server verified against {ca_path}); authentication: user and password (user \"lather\")"
    );
    assert!(stdout.contains(&expected), "no {expected:?} in {stdout}");
    assert!(!stdout.contains("very-secret-pw") && !stderr.contains("very-secret-pw"));

    let out = check(
        &dir,
        "token.toml",
        "[nats]\nurl = \"nats://127.0.0.1:4222\"\ntoken = \"tok-very-secret\"\n",
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(
        stdout.contains("no TLS unless the server asks for it; authentication: token"),
        "{stdout}"
    );
    assert!(!stdout.contains("tok-very-secret"), "{stdout}");
}

#[test]
fn an_unreadable_file_is_named_with_its_line() {
    let dir = ScratchDir::new("check-nats");
    let missing = dir.join("no-such.creds").display().to_string();
    let out = check(
        &dir,
        "missing.toml",
        &format!("[nats]\nurl = \"nats://127.0.0.1:4222\"\ncredentials_file = {missing:?}\n"),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains(":3"), "{stderr}");
    assert!(
        stderr.contains("nats.credentials_file") && stderr.contains(&missing),
        "{stderr}"
    );
}
