//! A gateway forwarding to `https://` upstreams: a private CA (`upstream_ca_file`), HTTP/2
//! by ALPN, client certificates (`upstream_client_cert_file`), the server name override
//! (`upstream_server_name`), and the faults of a TLS failure — which name the backend by
//! its place only and are not tried on the next backend.

use crate::support;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use lather_envelope::{FaultKind, SoapVersion};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use support::pki::{Issued, TestCa, scratch, tls_server_toml, write};
use support::*;

const ECHO: &str = "[[service]]\nname = \"echo\"\npath = \"/echo\"\nbuiltin = \"echo\"\n";

/// A lather echo over TLS with `server`'s certificate and `extra` TLS keys.
async fn tls_echo(dir: &std::path::Path, server: &Issued, extra: &str) -> TestServer {
    TestServer::start(&tls_server_toml(dir, server, extra, ECHO)).await
}

/// A plain-HTTP gateway at `/g` forwarding to `upstreams` with `keys`.
async fn gateway(upstreams: &[String], keys: &str) -> TestServer {
    let list: Vec<String> = upstreams.iter().map(|u| format!("{u:?}")).collect();
    TestServer::start(&format!(
        "[[service]]\nname = \"g\"\npath = \"/g\"\nupstream = [{}]\ntimeout_ms = 5000\n{keys}",
        list.join(", ")
    ))
    .await
}

fn body() -> String {
    envelope(SoapVersion::V12, "", ECHO_PAYLOAD)
}

async fn call(gateway: &TestServer) -> Answer {
    post(gateway.addr, "/g", SoapVersion::V12, body()).await
}

#[tokio::test]
async fn a_gateway_forwards_to_a_lather_echo_over_https_trusting_a_private_ca() {
    let dir = scratch("up-private-ca");
    let ca = TestCa::new("private CA");
    let backend = tls_echo(&dir, &ca.server("backend", &[]), "").await;
    let url = format!("https://localhost:{}/echo", backend.addr.port());
    let ca_file = write(&dir, "ca.pem", &ca.pem());
    for protocol in ["http1", "h2"] {
        let gw = gateway(
            std::slice::from_ref(&url),
            &format!("upstream_ca_file = {ca_file}\nupstream_protocol = \"{protocol}\"\n"),
        )
        .await;
        let got = call(&gw).await;
        assert_eq!(got.status, 200, "{protocol}: {}", got.text());
        assert!(got.text().contains("hello &amp; welcome"), "{}", got.text());
    }
}

/// What a TLS test backend saw: the HTTP version of each request.
type Versions = Arc<Mutex<Vec<http::Version>>>;

/// A TLS backend offering `h2` and `http/1.1` by ALPN, answering every request with an
/// envelope; records each request's HTTP version.
async fn recording_backend(server: &Issued) -> (SocketAddr, Versions) {
    use rustls::pki_types::pem::PemObject;
    let chain = vec![server.der.clone()];
    let key = rustls::pki_types::PrivateKeyDer::from_pem_slice(server.key_pem.as_bytes()).unwrap();
    let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(chain, key)
    .unwrap();
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let versions: Versions = Arc::default();
    let seen = versions.clone();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            let seen = seen.clone();
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let svc =
                    hyper::service::service_fn(move |req: http::Request<hyper::body::Incoming>| {
                        let seen = seen.clone();
                        async move {
                            seen.lock().unwrap().push(req.version());
                            let _ = req.into_body().collect().await;
                            let mut r = http::Response::new(Full::new(Bytes::from(envelope(
                                SoapVersion::V12,
                                "",
                                "<ok/>",
                            ))));
                            r.headers_mut().insert(
                                "content-type",
                                "application/soap+xml; charset=utf-8".parse().unwrap(),
                            );
                            Ok::<_, std::convert::Infallible>(r)
                        }
                    });
                let _ = hyper_util::server::conn::auto::Builder::new(
                    hyper_util::rt::TokioExecutor::new(),
                )
                .serve_connection(hyper_util::rt::TokioIo::new(tls), svc)
                .await;
            });
        }
    });
    (addr, versions)
}

#[tokio::test]
async fn the_upstream_protocol_is_the_one_alpn_offers() {
    let dir = scratch("up-alpn");
    let ca = TestCa::new("private CA");
    let (addr, versions) = recording_backend(&ca.server("backend", &[])).await;
    let url = format!("https://localhost:{}/ws", addr.port());
    let ca_file = write(&dir, "ca.pem", &ca.pem());
    for (protocol, expected) in [
        ("h2", http::Version::HTTP_2),
        ("http1", http::Version::HTTP_11),
    ] {
        let gw = gateway(
            std::slice::from_ref(&url),
            &format!("upstream_ca_file = {ca_file}\nupstream_protocol = \"{protocol}\"\n"),
        )
        .await;
        let got = call(&gw).await;
        assert_eq!(got.status, 200, "{}", got.text());
        assert_eq!(versions.lock().unwrap().pop(), Some(expected), "{protocol}");
    }
}

#[tokio::test]
async fn an_upstream_certificate_of_an_untrusted_ca_is_a_fault_naming_the_backend_by_place() {
    let dir = scratch("up-wrong-ca");
    let ca = TestCa::new("backend CA");
    let other = TestCa::new("other CA");
    let backend = tls_echo(&dir, &ca.server("backend", &[]), "").await;
    let plain = TestServer::echo().await;
    let tls_url = format!("https://localhost:{}/echo", backend.addr.port());
    let plain_url = plain.url("/echo");
    let other_file = write(&dir, "other.pem", &other.pem());
    let gw = gateway(
        &[tls_url, plain_url],
        &format!("upstream_ca_file = {other_file}\n"),
    )
    .await;
    // Round robin: one request starts at each backend. The TLS failure is not tried on
    // the next backend, so exactly one of the two is a fault.
    let answers = [call(&gw).await, call(&gw).await];
    let faults: Vec<&Answer> = answers.iter().filter(|a| a.status != 200).collect();
    assert_eq!(
        faults.len(),
        1,
        "{:?}",
        answers.iter().map(Answer::text).collect::<Vec<_>>()
    );
    let fault = faults[0];
    fault.assert_fault(FaultKind::UpstreamFailed, SoapVersion::V12);
    let text = fault.text();
    assert!(text.contains("backend 1 of 2"), "{text}");
    assert!(text.contains("not issued by a trusted CA"), "{text}");
    for hidden in ["https://", "localhost", &backend.addr.port().to_string()] {
        assert!(!text.contains(hidden), "the fault names {hidden}: {text}");
    }
}

#[tokio::test]
async fn a_backend_requiring_client_certificates_takes_the_gateways_and_refuses_none() {
    let dir = scratch("up-mtls");
    let ca = TestCa::new("private CA");
    let ca_file = write(&dir, "ca.pem", &ca.pem());
    let backend = tls_echo(
        &dir,
        &ca.server("backend", &[]),
        &format!("client_ca_file = {ca_file}\nclient_auth = \"required\"\n"),
    )
    .await;
    let url = format!("https://localhost:{}/echo", backend.addr.port());
    let client = ca.client("gateway");
    let cert = write(&dir, "gw.pem", &client.cert_pem);
    let key = write(&dir, "gw.key", &client.key_pem);
    for protocol in ["http1", "h2"] {
        let gw = gateway(
            std::slice::from_ref(&url),
            &format!(
                "upstream_ca_file = {ca_file}\nupstream_client_cert_file = {cert}\nupstream_client_key_file = {key}\nupstream_protocol = \"{protocol}\"\n"
            ),
        )
        .await;
        let got = call(&gw).await;
        assert_eq!(got.status, 200, "{protocol}: {}", got.text());
    }
    let without = gateway(
        std::slice::from_ref(&url),
        &format!("upstream_ca_file = {ca_file}\n"),
    )
    .await;
    let got = call(&without).await;
    got.assert_fault(FaultKind::UpstreamFailed, SoapVersion::V12);
    assert!(got.text().contains("backend 1 of 1"), "{}", got.text());
    assert!(
        got.text()
            .contains("the TLS handshake failed: the backend sent the alert CertificateRequired"),
        "{}",
        got.text()
    );
}

#[tokio::test]
async fn upstream_server_name_is_the_name_sent_and_verified() {
    let dir = scratch("up-name");
    let ca = TestCa::new("private CA");
    let backend = tls_echo(&dir, &ca.server_only_for(&["backend.internal"]), "").await;
    let url = format!("https://127.0.0.1:{}/echo", backend.addr.port());
    let ca_file = write(&dir, "ca.pem", &ca.pem());
    let by_host = gateway(
        std::slice::from_ref(&url),
        &format!("upstream_ca_file = {ca_file}\n"),
    )
    .await;
    let got = call(&by_host).await;
    got.assert_fault(FaultKind::UpstreamFailed, SoapVersion::V12);
    assert!(
        got.text().contains("not valid for the server name"),
        "{}",
        got.text()
    );
    assert!(!got.text().contains("backend.internal"), "{}", got.text());
    let by_name = gateway(
        std::slice::from_ref(&url),
        &format!("upstream_ca_file = {ca_file}\nupstream_server_name = \"backend.internal\"\n"),
    )
    .await;
    let got = call(&by_name).await;
    assert_eq!(got.status, 200, "{}", got.text());
}

#[tokio::test]
async fn an_unreadable_upstream_ca_file_stops_the_start_at_its_line() {
    let dir = scratch("up-errors");
    let missing = format!("{:?}", dir.join("nope.pem").display().to_string());
    let junk = write(
        &dir,
        "junk.pem",
        "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
    );
    for (keys, line, says) in [
        (
            format!("upstream_ca_file = {missing}\n"),
            5,
            "nope.pem\": cannot be read",
        ),
        (format!("upstream_ca_file = {junk}\n"), 5, "not a usable CA"),
        (
            format!(
                "upstream_client_cert_file = {missing}\nupstream_client_key_file = {missing}\n"
            ),
            5,
            "upstream_client_cert_file",
        ),
    ] {
        let text = format!(
            "[[service]]\nname = \"g\"\npath = \"/g\"\nupstream = [\"https://b.example/ws\"]\n{keys}"
        );
        let config = lather_config::Config::from_toml(&text, "gw.toml").unwrap();
        let e = lather_http::Server::from_config(&config).await.unwrap_err();
        let msg = e.to_string();
        assert!(msg.starts_with(&format!("gw.toml:{line}:")), "{msg}");
        assert!(msg.contains(says), "{msg}");
    }
}

#[tokio::test]
async fn a_gateway_follows_a_registry_over_https_trusting_outbound_ca_file() {
    let dir = scratch("up-registry-https");
    let ca = TestCa::new("registry CA");
    let registry = TestServer::start(&tls_server_toml(
        &dir,
        &ca.server("registry", &[]),
        "",
        "[[service]]\nname = \"reg\"\npath = \"/reg\"\nbuiltin = \"registry\"\n",
    ))
    .await;
    // A plain-HTTP echo registers itself with the registry, over TLS.
    let backend = TestServer::echo().await;
    let register = envelope(
        SoapVersion::V12,
        "",
        &format!(
            r#"<lr:Register xmlns:lr="urn:lather:registry"><lr:Name>quotes</lr:Name><lr:Endpoint>http://{}/echo</lr:Endpoint></lr:Register>"#,
            backend.addr
        ),
    );
    let client = support::pki::TlsClient::new(&ca, None, &[b"http/1.1"]);
    let registered = client
        .post(registry.addr, "/reg", SoapVersion::V12, register)
        .await
        .expect("the registry answers over TLS");
    assert_eq!(
        registered.answer.status,
        200,
        "{}",
        registered.answer.text()
    );
    let ca_file = write(&dir, "ca.pem", &ca.pem());
    let gw = TestServer::start(&format!(
        "[server]\nlisten = \"127.0.0.1:0\"\noutbound_ca_file = {ca_file}\n[[service]]\nname = \"g\"\npath = \"/g\"\nupstream = {{ registry = \"https://localhost:{}/reg\", name = \"quotes\", poll_ms = 50 }}\n",
        registry.addr.port()
    ))
    .await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let got = call(&gw).await;
        if got.status == 200 {
            assert!(got.text().contains("hello &amp; welcome"), "{}", got.text());
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the registry's backend never reached: {}",
            got.text()
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}
