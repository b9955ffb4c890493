//! `[server.tls]`: the listener's TLS keys, their defaults, and the errors that name their
//! line.

use lather_config::{ClientAuth, Config};

use std::time::Duration;

fn error_of(text: &str) -> (Option<usize>, String) {
    let e = Config::from_toml(text, "t.toml").unwrap_err();
    (e.line(), e.to_string())
}

#[test]
fn tls_keys_are_read_with_their_defaults() {
    assert!(Config::from_toml("", "t").unwrap().server.tls.is_none());
    let config = Config::from_toml(
        "[server]\nlisten = \"127.0.0.1:0\"\n[server.tls]\ncert_file = \"c.pem\"\nkey_file = \"k.pem\"\n",
        "t",
    )
    .unwrap();
    let tls = config.server.tls.unwrap();
    assert_eq!(tls.cert_file.get_ref(), "c.pem");
    assert_eq!(tls.client_auth(), ClientAuth::None);
    assert_eq!(tls.reload_check(), Some(Duration::from_secs(10)));
    let config = Config::from_toml(
        "[server.tls]\ncert_file = \"c.pem\"\nkey_file = \"k.pem\"\nclient_ca_file = \"ca.pem\"\nclient_auth = \"required\"\nreload_check_ms = 0\n",
        "t",
    )
    .unwrap();
    let tls = config.server.tls.unwrap();
    assert_eq!(tls.client_auth(), ClientAuth::Required);
    assert_eq!(tls.reload_check(), None);
}

#[test]
fn client_auth_needs_a_ca_and_errors_name_their_line() {
    let (line, msg) = error_of(
        "[server.tls]\ncert_file = \"c.pem\"\nkey_file = \"k.pem\"\nclient_auth = \"optional\"\n",
    );
    assert_eq!(line, Some(4), "{msg}");
    assert!(msg.contains("client_ca_file"), "{msg}");
    let (line, msg) = error_of("[server.tls]\ncert_file = \"\"\nkey_file = \"k.pem\"\n");
    assert_eq!(line, Some(2), "{msg}");
    assert!(msg.contains("server.tls.cert_file: names no file"), "{msg}");
    let (_, msg) = error_of("[server.tls]\ncert_file = \"c.pem\"\n");
    assert!(msg.contains("key_file"), "{msg}");
    let (line, msg) = error_of(
        "[server.tls]\ncert_file = \"c.pem\"\nkey_file = \"k.pem\"\nclient_auth = \"maybe\"\n",
    );
    assert_eq!(line, Some(4), "{msg}");
    let (_, msg) =
        error_of("[server.tls]\ncert_file = \"c.pem\"\nkey_file = \"k.pem\"\ninsecure = true\n");
    assert!(msg.contains("insecure"), "{msg}");
}

#[test]
fn stream_connections_follow_the_listener_unless_told() {
    let with_tls = "[server.tls]\ncert_file = \"c.pem\"\nkey_file = \"k.pem\"\n";
    let config = Config::from_toml(&format!("{with_tls}[stream]\n"), "t").unwrap();
    assert!(config.stream.unwrap().uses_tls(true));
    let config = Config::from_toml(&format!("{with_tls}[stream]\ntls = false\n"), "t").unwrap();
    assert!(!config.stream.unwrap().uses_tls(true));
    let config = Config::from_toml("[stream]\n", "t").unwrap();
    assert!(!config.stream.unwrap().uses_tls(false));
    let (_, msg) = error_of("[stream]\ntls = true\n");
    assert!(
        msg.contains("stream.tls") && msg.contains("[server.tls]"),
        "{msg}"
    );
}
