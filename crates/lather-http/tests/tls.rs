//! HTTPS on the listener (`[server.tls]`): SOAP over HTTP/1.1 and HTTP/2 chosen by ALPN,
//! client certificates (`client_auth`), certificate reload, and start-up errors naming the
//! file and line. Certificates are made at test time.

use crate::support;

use lather_envelope::SoapVersion;
use std::path::Path;
use std::time::Duration;
use support::pki::{Issued, TestCa, TlsClient, scratch, write};
use support::*;

const ECHO: &str = "[[service]]\nname = \"echo\"\npath = \"/echo\"\nbuiltin = \"echo\"\n";

/// An echo service behind `[server.tls]` serving `server`'s certificate (files in `dir`)
/// with `extra` TLS keys.
fn tls_server_toml(dir: &Path, server: &Issued, extra: &str) -> String {
    support::pki::tls_server_toml(dir, server, extra, ECHO)
}

fn echo_body(version: SoapVersion) -> String {
    envelope(version, "", ECHO_PAYLOAD)
}

#[tokio::test]
async fn https_answers_soap_over_http1_and_over_h2_chosen_by_alpn() {
    let dir = scratch("alpn");
    let ca = TestCa::new("test CA");
    let server = TestServer::start(&tls_server_toml(&dir, &ca.server("server", &[]), "")).await;

    for (alpn, expected) in [
        (b"http/1.1".as_slice(), http::Version::HTTP_11),
        (b"h2".as_slice(), http::Version::HTTP_2),
    ] {
        let client = TlsClient::new(&ca, None, &[alpn]);
        let got = client
            .post(
                server.addr,
                "/echo",
                SoapVersion::V12,
                echo_body(SoapVersion::V12),
            )
            .await
            .unwrap();
        assert_eq!(got.version, expected);
        assert_eq!(got.answer.status, 200, "{}", got.answer.text());
        assert!(
            got.answer.text().contains("hello &amp; welcome"),
            "{}",
            got.answer.text()
        );
    }

    // The WSDL names the service by an https:// address.
    let client = TlsClient::new(&ca, None, &[b"http/1.1"]);
    let wsdl = client.get(server.addr, "/echo?wsdl").await.unwrap();
    let expected = format!("location=\"https://localhost:{}/echo\"", server.addr.port());
    assert!(
        wsdl.answer.text().contains(&expected),
        "{}",
        wsdl.answer.text()
    );

    // Plain HTTP to the TLS port gets no answer, and is counted as a failed handshake.
    let plain = tokio::spawn(post(
        server.addr,
        "/echo",
        SoapVersion::V12,
        echo_body(SoapVersion::V12),
    ));
    assert!(
        plain.await.is_err(),
        "plain HTTP got an answer from the TLS port"
    );
    let metrics = client.get(server.addr, "/metrics").await.unwrap();
    let failed = metric(
        metrics.answer.text(),
        "lather_tls_handshake_failures_total{reason=\"error\"}",
    );
    assert_eq!(failed, Some(1.0), "{}", metrics.answer.text());
}

#[tokio::test]
async fn required_client_certificates_must_come_from_the_configured_ca() {
    let dir = scratch("required");
    let ca = TestCa::new("test CA");
    let other = TestCa::new("other CA");
    let ca_file = write(&dir, "clients.pem", &ca.pem());
    let server = TestServer::start(&tls_server_toml(
        &dir,
        &ca.server("server", &[]),
        &format!("client_ca_file = {ca_file}\nclient_auth = \"required\"\n"),
    ))
    .await;
    let body = echo_body(SoapVersion::V11);

    let none = TlsClient::new(&ca, None, &[b"http/1.1"]);
    assert!(
        none.post(server.addr, "/echo", SoapVersion::V11, body.clone())
            .await
            .is_err(),
        "answered without a client certificate"
    );

    let good = TlsClient::new(&ca, Some(&ca.client("client-7")), &[b"http/1.1"]);
    let got = good
        .post(server.addr, "/echo", SoapVersion::V11, body.clone())
        .await
        .unwrap();
    assert_eq!(got.answer.status, 200, "{}", got.answer.text());

    let foreign = TlsClient::new(&ca, Some(&other.client("intruder")), &[b"h2"]);
    assert!(
        foreign
            .post(server.addr, "/echo", SoapVersion::V11, body)
            .await
            .is_err(),
        "answered a certificate of another CA"
    );

    let metrics = good.get(server.addr, "/metrics").await.unwrap();
    let failed = metric(
        metrics.answer.text(),
        "lather_tls_handshake_failures_total{reason=\"error\"}",
    );
    assert_eq!(failed, Some(2.0), "{}", metrics.answer.text());
}

#[tokio::test]
async fn optional_client_certificates_admit_clients_without_one_but_not_a_foreign_one() {
    let dir = scratch("optional");
    let ca = TestCa::new("test CA");
    let other = TestCa::new("other CA");
    let ca_file = write(&dir, "clients.pem", &ca.pem());
    let server = TestServer::start(&tls_server_toml(
        &dir,
        &ca.server("server", &[]),
        &format!("client_ca_file = {ca_file}\nclient_auth = \"optional\"\n"),
    ))
    .await;
    let body = echo_body(SoapVersion::V12);
    for client in [None, Some(ca.client("member"))] {
        let got = TlsClient::new(&ca, client.as_ref(), &[b"h2"])
            .post(server.addr, "/echo", SoapVersion::V12, body.clone())
            .await
            .unwrap();
        assert_eq!(got.answer.status, 200, "{}", got.answer.text());
    }
    let foreign = TlsClient::new(&ca, Some(&other.client("intruder")), &[b"http/1.1"]);
    assert!(
        foreign
            .post(server.addr, "/echo", SoapVersion::V12, body)
            .await
            .is_err()
    );
}

/// A service answering with the name of the client certificate the request came with.
struct WhoAmI;

impl lather_pipeline::SoapService for WhoAmI {
    fn call<'a>(
        &'a self,
        request: lather_pipeline::ServiceRequest<'a>,
    ) -> lather_pipeline::ServiceFuture<'a> {
        Box::pin(async move {
            let name = request
                .context
                .properties
                .get::<lather_pipeline::ClientCertificate>()
                .map_or("none", |c| c.name())
                .to_owned();
            let version = request.envelope.version();
            let bytes = lather_envelope::EnvelopeBuilder::new(version)
                .body(bytes::Bytes::from(format!("<who>{name}</who>")))
                .build();
            Ok(lather_pipeline::Reply::Written(version, bytes))
        })
    }
}

#[tokio::test]
async fn a_verified_client_certificate_reaches_the_service_by_name() {
    let dir = scratch("who");
    let ca = TestCa::new("test CA");
    let text = tls_server_toml(
        &dir,
        &ca.server("server", &[]),
        &format!(
            "client_ca_file = {}\nclient_auth = \"optional\"\n",
            write(&dir, "clients.pem", &ca.pem())
        ),
    );
    let config = lather_config::Config::from_toml(&text, "who.toml").unwrap();
    let server = lather_http::Server::builder()
        .settings(config.server.clone())
        .service("/who", WhoAmI)
        .bind()
        .await
        .unwrap();
    assert_eq!(server.scheme(), "https");
    let addr = server.local_addr();
    tokio::spawn(server.serve(std::future::pending()));
    let body = echo_body(SoapVersion::V12);
    let named = TlsClient::new(&ca, Some(&ca.client("client-7")), &[b"h2"])
        .post(addr, "/who", SoapVersion::V12, body.clone())
        .await
        .unwrap();
    assert_eq!(field(&named.answer, "who"), "client-7");
    let anonymous = TlsClient::new(&ca, None, &[b"http/1.1"])
        .post(addr, "/who", SoapVersion::V12, body)
        .await
        .unwrap();
    assert_eq!(field(&anonymous.answer, "who"), "none");
}

/// The certificate new handshakes see, asked until it is `want` (at most `tries` times,
/// 50 ms apart); whether it came.
async fn sees(client: &TlsClient, addr: std::net::SocketAddr, want: &Issued, tries: usize) -> bool {
    for _ in 0..tries {
        let got = client.get(addr, "/health").await.unwrap();
        if got.server_cert == want.der {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

#[tokio::test]
async fn a_replaced_certificate_is_used_for_new_handshakes_and_a_broken_one_is_not() {
    let dir = scratch("reload");
    let ca = TestCa::new("test CA");
    let first = ca.server("first", &[]);
    let server = TestServer::start(&tls_server_toml(&dir, &first, "reload_check_ms = 50\n")).await;
    let client = TlsClient::new(&ca, None, &[b"http/1.1"]);
    assert!(sees(&client, server.addr, &first, 1).await);

    let second = ca.server("second", &[]);
    write(&dir, "server.key", &second.key_pem);
    write(&dir, "server.pem", &second.cert_pem);
    assert!(
        sees(&client, server.addr, &second, 200).await,
        "the new certificate was never served"
    );

    // A certificate with another's key: logged and not used, the one in use stays.
    let third = ca.server("third", &[]);
    write(&dir, "server.pem", &third.cert_pem);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(sees(&client, server.addr, &second, 1).await);

    // Completing the pair puts it in use.
    write(&dir, "server.key", &third.key_pem);
    assert!(
        sees(&client, server.addr, &third, 200).await,
        "the completed pair was never served"
    );
}

/// Whether `client` is answered, asked until it is `want` (at most `tries` times, 50 ms
/// apart).
async fn admitted(
    client: &TlsClient,
    addr: std::net::SocketAddr,
    want: bool,
    tries: usize,
) -> bool {
    for _ in 0..tries {
        if client.get(addr, "/health").await.is_ok() == want {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

#[tokio::test]
async fn a_replaced_client_ca_bundle_is_used_for_new_handshakes_and_a_broken_one_is_not() {
    let dir = scratch("client-ca-reload");
    let ca = TestCa::new("test CA");
    let first = TestCa::new("first clients");
    let second = TestCa::new("second clients");
    let ca_file = write(&dir, "clients.pem", &first.pem());
    let server = TestServer::start(&tls_server_toml(
        &dir,
        &ca.server("server", &[]),
        &format!(
            "client_ca_file = {ca_file}
client_auth = \"required\"
reload_check_ms = 50
"
        ),
    ))
    .await;
    let old = TlsClient::new(&ca, Some(&first.client("old")), &[b"http/1.1"]);
    let new = TlsClient::new(&ca, Some(&second.client("new")), &[b"http/1.1"]);
    assert!(admitted(&old, server.addr, true, 1).await);
    assert!(admitted(&new, server.addr, false, 1).await);

    write(&dir, "clients.pem", &second.pem());
    assert!(
        admitted(&new, server.addr, true, 200).await,
        "the new client CA was never used"
    );
    assert!(
        admitted(&old, server.addr, false, 1).await,
        "the old CA still admits"
    );

    // A bundle that holds no certificate: logged, and the one in use stays.
    write(&dir, "clients.pem", "not a certificate\n");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(admitted(&new, server.addr, true, 1).await);
    assert!(admitted(&old, server.addr, false, 1).await);
}

#[tokio::test]
async fn unusable_tls_files_stop_the_start_naming_the_file_and_line() {
    let dir = scratch("errors");
    let ca = TestCa::new("test CA");
    let good = ca.server("server", &[]);
    let other = ca.server("other", &[]);
    let cert = write(&dir, "server.pem", &good.cert_pem);
    let wrong_key = write(&dir, "other.key", &other.key_pem);
    let not_pem = write(&dir, "junk.pem", "not a certificate");
    for (tls, line, says) in [
        (
            format!(
                "cert_file = {:?}\nkey_file = {wrong_key}\n",
                dir.join("missing.pem").display().to_string()
            ),
            4,
            "missing.pem\": cannot be read",
        ),
        (
            format!("cert_file = {cert}\nkey_file = {wrong_key}\n"),
            5,
            "is not the key of the certificate",
        ),
        (
            format!("cert_file = {not_pem}\nkey_file = {wrong_key}\n"),
            4,
            "holds no certificate",
        ),
        (
            format!(
                "cert_file = {cert}\nkey_file = {}\nclient_ca_file = {not_pem}\nclient_auth = \"required\"\n",
                write(&dir, "server.key", &good.key_pem)
            ),
            6,
            "client_ca_file",
        ),
    ] {
        let text = format!("[server]\nlisten = \"127.0.0.1:0\"\n[server.tls]\n{tls}{ECHO}");
        let config = lather_config::Config::from_toml(&text, "tls.toml").unwrap();
        let e = lather_http::Server::from_config(&config).await.unwrap_err();
        assert!(e.is_config(), "{e}");
        let msg = e.to_string();
        assert!(msg.starts_with(&format!("tls.toml:{line}:")), "{msg}");
        assert!(msg.contains(says), "{msg}");
    }
}
