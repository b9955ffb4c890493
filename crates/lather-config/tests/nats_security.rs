//! `[nats]` TLS and authentication keys: the method chosen, when TLS is on, and the
//! errors (naming their line) for incomplete pairs and competing methods.

use lather_config::{Config, NatsAuth};

const URL: &str = "[nats]\nurl = \"nats://127.0.0.1:4222\"\n";

fn nats(extra: &str) -> lather_config::NatsConfig {
    Config::from_toml(&format!("{URL}{extra}"), "t.toml")
        .unwrap()
        .nats
        .unwrap()
}

fn error_of(extra: &str) -> (Option<usize>, String) {
    let e = Config::from_toml(&format!("{URL}{extra}"), "t.toml").unwrap_err();
    (e.line(), e.to_string())
}

#[test]
fn each_method_is_read_and_described_without_its_secret() {
    assert!(matches!(nats("").auth(), NatsAuth::None));
    let config = nats("user = \"lather\"\npassword = \"hunter2\"\n");
    let auth = config.auth();
    assert!(
        matches!(auth, NatsAuth::UserPassword { user: "lather", password } if password.expose() == "hunter2")
    );
    assert!(!auth.describe().contains("hunter2"), "{}", auth.describe());
    assert!(!format!("{config:?}").contains("hunter2"));
    let config = nats("token = \"s3cr3t-token\"\n");
    assert!(matches!(config.auth(), NatsAuth::Token(t) if t.expose() == "s3cr3t-token"));
    assert!(!config.auth().describe().contains("s3cr3t"));
    assert!(!format!("{config:?}").contains("s3cr3t"));
    assert!(matches!(
        nats("nkey_seed_file = \"/k/seed\"\n").auth(),
        NatsAuth::Nkey(f) if f.get_ref() == "/k/seed"
    ));
    assert!(matches!(
        nats("credentials_file = \"/k/u.creds\"\n").auth(),
        NatsAuth::Credentials(f) if f.get_ref() == "/k/u.creds"
    ));
}

#[test]
fn the_password_may_come_from_the_environment() {
    let text = format!("{URL}user = \"lather\"\npassword = \"${{NATS_PW}}\"\n");
    let env = |name: &str| (name == "NATS_PW").then(|| "from-env".to_owned());
    let config = Config::from_toml_with_env(&text, "t.toml", &env).unwrap();
    assert!(matches!(
        config.nats.unwrap().auth(),
        NatsAuth::UserPassword { password, .. } if password.expose() == "from-env"
    ));
}

#[test]
fn tls_is_required_by_a_tls_url_a_ca_or_a_client_certificate_unless_said_otherwise() {
    assert!(!nats("").tls_required());
    assert!(nats("tls_required = true\n").tls_required());
    assert!(nats("tls_ca_file = \"ca.pem\"\n").tls_required());
    assert!(
        nats("tls_client_cert_file = \"c.pem\"\ntls_client_key_file = \"k.pem\"\n").tls_required()
    );
    assert!(!nats("tls_ca_file = \"ca.pem\"\ntls_required = false\n").tls_required());
    let tls_url = Config::from_toml("[nats]\nurl = \"tls://127.0.0.1:4222\"\n", "t")
        .unwrap()
        .nats
        .unwrap();
    assert!(tls_url.tls_required());
    let e = Config::from_toml(
        "[nats]\nurl = \"tls://127.0.0.1:4222\"\ntls_required = false\n",
        "t",
    )
    .unwrap_err();
    assert_eq!(e.line(), Some(3), "{e}");
    assert!(e.to_string().contains("tls://"), "{e}");
}

#[test]
fn competing_methods_are_refused_at_the_second_ones_line() {
    let (line, msg) = error_of("token = \"t\"\ncredentials_file = \"u.creds\"\n");
    assert_eq!(line, Some(3), "{msg}");
    assert!(
        msg.contains("credentials_file") && msg.contains("token"),
        "{msg}"
    );
    let (line, msg) = error_of("nkey_seed_file = \"seed\"\nuser = \"u\"\npassword = \"p\"\n");
    assert_eq!(line, Some(4), "{msg}");
    assert!(msg.contains("only one authentication method"), "{msg}");
    assert!(!msg.contains("\"p\""), "{msg}");
}

#[test]
fn pairs_must_be_complete_and_values_not_empty() {
    let (line, msg) = error_of("user = \"u\"\n");
    assert_eq!(line, Some(3), "{msg}");
    assert!(msg.contains("nats.password"), "{msg}");
    let (line, msg) = error_of("password = \"p\"\n");
    assert_eq!(line, Some(3), "{msg}");
    assert!(msg.contains("nats.user"), "{msg}");
    let (line, msg) = error_of("tls_client_key_file = \"k.pem\"\n");
    assert_eq!(line, Some(3), "{msg}");
    assert!(msg.contains("tls_client_cert_file"), "{msg}");
    let (line, msg) = error_of("tls_client_cert_file = \"c.pem\"\n");
    assert_eq!(line, Some(3), "{msg}");
    assert!(msg.contains("tls_client_key_file"), "{msg}");
    let (line, msg) = error_of("tls_ca_file = \"\"\n");
    assert_eq!(line, Some(3), "{msg}");
    assert!(msg.contains("empty"), "{msg}");
    let (line, msg) = error_of("token = \"\"\n");
    assert_eq!(line, Some(3), "{msg}");
}
