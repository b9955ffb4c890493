//! TLS and authentication towards NATS with a real `nats-server`: a server with a TLS
//! certificate made at test time (verified against the configured CA, refused with
//! another, client certificates), and servers asking for a user and password, a token
//! or an nkey. Every connection goes through [`Link`], as the server's and the workers' do.

use lather_config::{Config, NatsConfig};
use lather_remote::{Link, NatsSetupError, connect_options};
use lather_test_util::nats::NatsServer;
use std::path::Path;

/// A CA of its own and what it issues (PEM).
struct Pki {
    ca: rcgen::CertifiedIssuer<'static, rcgen::KeyPair>,
}

/// A certificate and its key, PEM.
struct Issued {
    cert: String,
    key: String,
}

impl Pki {
    fn new(name: &str) -> Pki {
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params.key_usages = vec![
            rcgen::KeyUsagePurpose::KeyCertSign,
            rcgen::KeyUsagePurpose::DigitalSignature,
        ];
        params.distinguished_name = rcgen::DistinguishedName::new();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, name);
        let key = rcgen::KeyPair::generate().unwrap();
        Pki {
            ca: rcgen::CertifiedIssuer::self_signed(params, key).unwrap(),
        }
    }

    fn issue(&self, names: &[&str], usage: rcgen::ExtendedKeyUsagePurpose) -> Issued {
        let names: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
        let mut params = rcgen::CertificateParams::new(names).unwrap();
        params.extended_key_usages = vec![usage];
        params.use_authority_key_identifier_extension = true;
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &self.ca).unwrap();
        Issued {
            cert: cert.pem(),
            key: key.serialize_pem(),
        }
    }
}

/// Writes `text` to `dir/name`; the path.
fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

/// The `[nats]` table of `url` with `extra` keys.
fn nats(url: &str, extra: &str) -> NatsConfig {
    let text = format!("[nats]\nurl = \"{url}\"\nconnect_timeout_ms = 3000\n{extra}");
    Config::from_toml(&text, "t.toml")
        .unwrap_or_else(|e| panic!("{e}"))
        .nats
        .unwrap()
}

/// Connects a link as lather does, then proves the connection carries a round trip.
async fn connects(config: &NatsConfig) -> Result<(), String> {
    let link = Link::new(config);
    link.connect().await.map_err(|e| e.to_string())?;
    let client = link.client().unwrap();
    client.flush().await.map_err(|e| e.to_string())
}

/// A server with a certificate for 127.0.0.1 from `pki`, asking clients for one when
/// `verify`; its files are in [`NatsServer::dir`].
fn tls_server(name: &str, pki: &Pki, verify: bool) -> NatsServer {
    let dir = NatsServer::scratch_dir(name);
    let server = pki.issue(
        &["127.0.0.1", "localhost"],
        rcgen::ExtendedKeyUsagePurpose::ServerAuth,
    );
    let cert = write(&dir, "server.pem", &server.cert);
    let key = write(&dir, "server.key", &server.key);
    let ca = write(&dir, "ca.pem", &pki.ca.pem());
    let verify = if verify {
        format!("  ca_file: \"{ca}\"\n  verify: true\n")
    } else {
        String::new()
    };
    let conf = format!(
        "tls {{\n  cert_file: \"{cert}\"\n  key_file: \"{key}\"\n  timeout: 2\n{verify}}}\n"
    );
    NatsServer::start_configured_in(dir, &conf)
}

#[tokio::test]
async fn tls_verifies_the_server_against_the_configured_ca_and_refuses_another() {
    let pki = Pki::new("nats test CA");
    let server = tls_server("tls-ca", &pki, false);
    let dir = server.dir();
    let ca = write(dir, "right-ca.pem", &pki.ca.pem());
    let wrong = write(dir, "wrong-ca.pem", &Pki::new("another CA").ca.pem());

    let right = nats(&server.tls_url(), &format!("tls_ca_file = {ca:?}\n"));
    connects(&right).await.unwrap();
    // A nats:// URL with a CA still requires TLS (and the server asks for it anyway).
    connects(&nats(&server.url(), &format!("tls_ca_file = {ca:?}\n")))
        .await
        .unwrap();

    let refused = connects(&nats(
        &server.tls_url(),
        &format!("tls_ca_file = {wrong:?}\n"),
    ))
    .await
    .unwrap_err();
    assert!(
        refused.contains("cannot reach the NATS server"),
        "{refused}"
    );
    // Without a CA a tls:// URL is verified against the system's roots, which do not
    // hold this test CA.
    assert!(connects(&nats(&server.tls_url(), "")).await.is_err());
}

#[tokio::test]
async fn tls_required_refuses_a_server_without_tls() {
    let server = NatsServer::start("tls-none");
    connects(&nats(&server.url(), "")).await.unwrap();
    let refused = connects(&nats(&server.url(), "tls_required = true\n")).await;
    assert!(refused.is_err(), "a plain server passed for TLS");
}

#[tokio::test]
async fn a_server_asking_for_client_certificates_admits_one_from_its_ca() {
    let pki = Pki::new("nats mtls CA");
    let server = tls_server("tls-mtls", &pki, true);
    let dir = server.dir();
    let ca = write(dir, "client-ca.pem", &pki.ca.pem());
    let client = pki.issue(&[], rcgen::ExtendedKeyUsagePurpose::ClientAuth);
    let cert = write(dir, "client.pem", &client.cert);
    let key = write(dir, "client.key", &client.key);

    let with_cert = format!(
        "tls_ca_file = {ca:?}\ntls_client_cert_file = {cert:?}\ntls_client_key_file = {key:?}\n"
    );
    connects(&nats(&server.tls_url(), &with_cert))
        .await
        .unwrap();
    let without = format!("tls_ca_file = {ca:?}\n");
    assert!(connects(&nats(&server.tls_url(), &without)).await.is_err());
    let foreign = Pki::new("foreign CA").issue(&[], rcgen::ExtendedKeyUsagePurpose::ClientAuth);
    let cert = write(dir, "foreign.pem", &foreign.cert);
    let key = write(dir, "foreign.key", &foreign.key);
    let with_foreign = format!(
        "tls_ca_file = {ca:?}\ntls_client_cert_file = {cert:?}\ntls_client_key_file = {key:?}\n"
    );
    assert!(
        connects(&nats(&server.tls_url(), &with_foreign))
            .await
            .is_err()
    );
}

#[tokio::test]
async fn user_and_password_are_presented_and_needed() {
    let server = NatsServer::start_configured(
        "auth-user",
        "authorization {\n  user: lather\n  password: \"pa55-w0rd\"\n}\n",
    );
    connects(&nats(
        &server.url(),
        "user = \"lather\"\npassword = \"pa55-w0rd\"\n",
    ))
    .await
    .unwrap();
    let refused = connects(&nats(&server.url(), "")).await.unwrap_err();
    assert!(
        refused.contains("cannot reach the NATS server"),
        "{refused}"
    );
    let wrong = connects(&nats(
        &server.url(),
        "user = \"lather\"\npassword = \"nope\"\n",
    ))
    .await
    .unwrap_err();
    assert!(!wrong.contains("nope"), "the password shows in {wrong}");
}

#[tokio::test]
async fn a_token_is_presented_and_needed() {
    let server =
        NatsServer::start_configured("auth-token", "authorization {\n  token: \"t0k-3n\"\n}\n");
    connects(&nats(&server.url(), "token = \"t0k-3n\"\n"))
        .await
        .unwrap();
    assert!(connects(&nats(&server.url(), "")).await.is_err());
    assert!(
        connects(&nats(&server.url(), "token = \"other\"\n"))
            .await
            .is_err()
    );
}

#[test]
fn unreadable_or_unusable_files_are_named_with_their_key() {
    let dir = NatsServer::scratch_dir("files");
    let missing = dir.join("missing.pem").display().to_string();
    let config = nats(
        "nats://127.0.0.1:4222",
        &format!("tls_ca_file = {missing:?}\n"),
    );
    let e = connect_options(&config).unwrap_err();
    assert!(
        matches!(
            e,
            NatsSetupError::Unreadable {
                key: "tls_ca_file",
                ..
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains(&missing), "{e}");
    let not_pem = write(&dir, "not.pem", "hello\n");
    let config = nats(
        "nats://127.0.0.1:4222",
        &format!("tls_ca_file = {not_pem:?}\n"),
    );
    let e = connect_options(&config).unwrap_err();
    assert!(
        matches!(
            e,
            NatsSetupError::Unusable {
                key: "tls_ca_file",
                ..
            }
        ),
        "{e}"
    );
    let config = nats(
        "nats://127.0.0.1:4222",
        &format!("nkey_seed_file = {not_pem:?}\n"),
    );
    let e = connect_options(&config).unwrap_err();
    assert!(e.to_string().contains("nkey_seed_file"), "{e}");
}

#[cfg(feature = "nkeys")]
#[tokio::test]
async fn an_nkey_user_signs_the_servers_nonce() {
    let user = nkeys::KeyPair::new_user();
    let other = nkeys::KeyPair::new_user();
    let conf = format!(
        "authorization {{\n  users = [ {{ nkey: {} }} ]\n}}\n",
        user.public_key()
    );
    let server = NatsServer::start_configured("auth-nkey", &conf);
    let dir = server.dir();
    let seed = write(dir, "user.seed", &format!("{}\n", user.seed().unwrap()));
    let other_seed = write(dir, "other.seed", &other.seed().unwrap());
    connects(&nats(
        &server.url(),
        &format!("nkey_seed_file = {seed:?}\n"),
    ))
    .await
    .unwrap();
    assert!(
        connects(&nats(
            &server.url(),
            &format!("nkey_seed_file = {other_seed:?}\n")
        ))
        .await
        .is_err()
    );
    assert!(connects(&nats(&server.url(), "")).await.is_err());
}

/// A JWT as NATS signs them: header, claims, and `key`'s ed25519 signature, base64url.
#[cfg(feature = "nkeys")]
fn nats_jwt(key: &nkeys::KeyPair, subject: &str, name: &str, nats: &str) -> String {
    use base64::Engine;
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let header = b64.encode(r#"{"typ":"JWT","alg":"ed25519-nkey"}"#);
    let claims = format!(
        r#"{{"jti":"{name}-jti","iat":1700000000,"iss":"{}","name":"{name}","sub":"{subject}","nats":{nats}}}"#,
        key.public_key()
    );
    let signed = format!("{header}.{}", b64.encode(claims));
    let signature = key.sign(signed.as_bytes()).unwrap();
    format!("{signed}.{}", b64.encode(signature))
}

#[cfg(feature = "nkeys")]
#[tokio::test]
async fn a_credentials_file_authenticates_in_operator_mode() {
    let operator = nkeys::KeyPair::new_operator();
    let account = nkeys::KeyPair::new_account();
    let user = nkeys::KeyPair::new_user();
    let operator_jwt = nats_jwt(
        &operator,
        &operator.public_key(),
        "op",
        r#"{"type":"operator","version":2}"#,
    );
    let account_jwt = nats_jwt(
        &operator,
        &account.public_key(),
        "acc",
        r#"{"limits":{"subs":-1,"data":-1,"payload":-1,"imports":-1,"exports":-1,"wildcards":true,"conn":-1,"leaf":-1},"default_permissions":{"pub":{},"sub":{}},"type":"account","version":2}"#,
    );
    let user_jwt = nats_jwt(
        &account,
        &user.public_key(),
        "user",
        r#"{"pub":{},"sub":{},"subs":-1,"data":-1,"payload":-1,"type":"user","version":2}"#,
    );
    let conf = format!(
        "operator: \"{operator_jwt}\"\nresolver: MEMORY\nresolver_preload: {{\n  {}: \"{account_jwt}\"\n}}\n",
        account.public_key()
    );
    let server = NatsServer::start_configured("auth-creds", &conf);
    let dir = server.dir();
    let creds = |seed: &str| {
        format!(
            "-----BEGIN NATS USER JWT-----\n{user_jwt}\n------END NATS USER JWT------\n\n\
             ************************* IMPORTANT *************************\n\
             NKEY Seed printed below can be used to sign and prove identity.\n\n\
             -----BEGIN USER NKEY SEED-----\n{seed}\n------END USER NKEY SEED------\n"
        )
    };
    let good = write(dir, "user.creds", &creds(&user.seed().unwrap()));
    connects(&nats(
        &server.url(),
        &format!("credentials_file = {good:?}\n"),
    ))
    .await
    .unwrap();
    // The JWT with another user's seed: the nonce's signature does not match.
    let stranger = nkeys::KeyPair::new_user();
    let bad = write(dir, "bad.creds", &creds(&stranger.seed().unwrap()));
    assert!(
        connects(&nats(
            &server.url(),
            &format!("credentials_file = {bad:?}\n")
        ))
        .await
        .is_err()
    );
    assert!(connects(&nats(&server.url(), "")).await.is_err());
}
