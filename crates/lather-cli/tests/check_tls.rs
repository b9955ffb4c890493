//! `lather check` on TLS settings: the listener's certificate, client certificates and
//! reload, and a gateway's `https://` upstream TLS are explained; a TLS file that cannot be
//! used is an error naming the file and the line of its key.

use lather_test_util::ScratchDir;
use std::path::Path;
use std::process::{Command, Output};

fn check(dir: &Path, name: &str, text: &str) -> Output {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    Command::new(env!("CARGO_BIN_EXE_lather"))
        .args(["check", "--config", path.to_str().unwrap()])
        .output()
        .expect("run lather")
}

/// A self-signed certificate for localhost and its key, written to `dir`: their paths.
fn certificate(dir: &Path) -> (String, String) {
    let made = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    let cert = dir.join("server.pem");
    let key = dir.join("server.key");
    std::fs::write(&cert, made.cert.pem()).unwrap();
    std::fs::write(&key, made.signing_key.serialize_pem()).unwrap();
    (cert.display().to_string(), key.display().to_string())
}

#[test]
fn tls_settings_are_explained() {
    let dir = ScratchDir::new("check-tls");
    let (cert, key) = certificate(&dir);
    let out = check(
        &dir,
        "tls-ok.toml",
        &format!(
            "[server.tls]\ncert_file = {cert:?}\nkey_file = {key:?}\nclient_ca_file = {cert:?}\nclient_auth = \"optional\"\n\n\
             [[service]]\nname = \"g\"\npath = \"/g\"\nupstream = [\"https://backend.example:8443/ws\"]\n\
             upstream_ca_file = {cert:?}\nupstream_server_name = \"backend.internal\"\nupstream_protocol = \"h2\"\n"
        ),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for expected in [
        format!("TLS (HTTPS, ALPN h2 and http/1.1): certificate {cert} with key {key}, checked for a change every 10000 ms; client certificates optional (verified against {cert})"),
        "HTTP/2 to the upstreams (prior knowledge over http://, ALPN h2 over https://) over 4 connections".to_owned(),
        format!("https:// upstreams: certificates verified against the CAs in {cert} for the name backend.internal; no client certificate"),
    ] {
        assert!(stdout.contains(&expected), "no {expected:?} in {stdout}");
    }
}

#[test]
fn an_unusable_tls_file_is_an_error_at_its_line() {
    let dir = ScratchDir::new("check-tls");
    let (cert, _) = certificate(&dir);
    let missing = dir.join("missing.key").display().to_string();
    let out = check(
        &dir,
        "tls-bad.toml",
        &format!("[server.tls]\ncert_file = {cert:?}\nkey_file = {missing:?}\n"),
    );
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("tls-bad.toml:3:"), "{stderr}");
    assert!(
        stderr.contains(&format!("server.tls.key_file {missing:?}: cannot be read")),
        "{stderr}"
    );
    let out = check(
        &dir,
        "upstream-bad.toml",
        &format!(
            "[[service]]\nname = \"g\"\npath = \"/g\"\nupstream = [\"https://b.example/ws\"]\nupstream_ca_file = {missing:?}\n"
        ),
    );
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("upstream-bad.toml:5:"), "{stderr}");
    assert!(stderr.contains("upstream_ca_file"), "{stderr}");
}

#[test]
fn the_tls_example_is_a_valid_configuration() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/tls.toml");
    let config = lather_config::Config::load(std::path::Path::new(path)).unwrap();
    let tls = config.server.tls.as_ref().unwrap();
    assert_eq!(tls.client_auth(), lather_config::ClientAuth::Required);
    let gateway = config
        .services
        .iter()
        .find(|s| s.name.get_ref() == "quotes")
        .unwrap();
    assert_eq!(
        gateway.upstream_tls().server_name.as_deref(),
        Some("localhost")
    );
    assert_eq!(
        gateway.upstream_protocol(),
        lather_config::UpstreamProtocol::H2
    );
}
