//! Certificates made at test time (rcgen, ring): a CA, the certificates it issues, files
//! in a scratch directory, and an HTTPS client (tokio-rustls + hyper) that speaks HTTP/1.1
//! or HTTP/2 as ALPN agrees.

use super::{Answer, collect, soap_request};
use bytes::Bytes;
use http::Request;
use http_body_util::Full;
use hyper_util::rt::{TokioExecutor, TokioIo};
use lather_envelope::SoapVersion;
use lather_test_util::ScratchDir;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use tokio::net::TcpStream;

/// A certificate authority of its own.
pub struct TestCa {
    issuer: rcgen::CertifiedIssuer<'static, rcgen::KeyPair>,
}

/// A certificate and its key, PEM and DER.
#[derive(Clone)]
pub struct Issued {
    pub cert_pem: String,
    pub key_pem: String,
    pub der: CertificateDer<'static>,
}

impl TestCa {
    /// A self-signed CA named `name`.
    pub fn new(name: &str) -> TestCa {
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params.key_usages = vec![
            rcgen::KeyUsagePurpose::KeyCertSign,
            rcgen::KeyUsagePurpose::CrlSign,
            rcgen::KeyUsagePurpose::DigitalSignature,
        ];
        params.distinguished_name = rcgen::DistinguishedName::new();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, name);
        let key = rcgen::KeyPair::generate().unwrap();
        TestCa {
            issuer: rcgen::CertifiedIssuer::self_signed(params, key).unwrap(),
        }
    }

    /// The CA certificate, PEM.
    pub fn pem(&self) -> String {
        self.issuer.pem()
    }

    /// A server certificate for `localhost` and `127.0.0.1` (and `names`), subject CN `cn`.
    pub fn server(&self, cn: &str, names: &[&str]) -> Issued {
        let mut all = vec!["localhost".to_owned(), "127.0.0.1".to_owned()];
        all.extend(names.iter().map(|n| (*n).to_owned()));
        self.issue(cn, all, rcgen::ExtendedKeyUsagePurpose::ServerAuth)
    }

    /// A certificate only for `names` (not for localhost or 127.0.0.1).
    pub fn server_only_for(&self, names: &[&str]) -> Issued {
        let names = names.iter().map(|n| (*n).to_owned()).collect();
        self.issue("server", names, rcgen::ExtendedKeyUsagePurpose::ServerAuth)
    }

    /// A client certificate with subject CN `cn`.
    pub fn client(&self, cn: &str) -> Issued {
        self.issue(cn, Vec::new(), rcgen::ExtendedKeyUsagePurpose::ClientAuth)
    }

    fn issue(&self, cn: &str, names: Vec<String>, usage: rcgen::ExtendedKeyUsagePurpose) -> Issued {
        let mut params = rcgen::CertificateParams::new(names).unwrap();
        params.distinguished_name = rcgen::DistinguishedName::new();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, cn);
        params.extended_key_usages = vec![usage];
        params.use_authority_key_identifier_extension = true;
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        Issued {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
            der: cert.der().clone(),
        }
    }
}

/// A fresh scratch directory for a test's certificates and keys, removed when dropped.
pub fn scratch(name: &str) -> ScratchDir {
    ScratchDir::new(&format!("tls-{name}"))
}

/// Writes `text` to `dir/name`; its path as a TOML string value (quoted).
pub fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    format!("{:?}", path.display().to_string())
}

/// A configuration listening on a free port with `[server.tls]` serving `server`'s
/// certificate (its files written to `dir`), `extra` TLS keys, and `services`.
pub fn tls_server_toml(dir: &Path, server: &Issued, extra: &str, services: &str) -> String {
    let cert = write(dir, "server.pem", &server.cert_pem);
    let key = write(dir, "server.key", &server.key_pem);
    format!(
        "[server]\nlisten = \"127.0.0.1:0\"\n[server.tls]\ncert_file = {cert}\nkey_file = {key}\n{extra}\n{services}"
    )
}

/// An HTTPS client trusting one CA, optionally presenting a certificate.
pub struct TlsClient {
    config: Arc<rustls::ClientConfig>,
}

/// What an HTTPS exchange showed: the answer, the HTTP version it came in, and the
/// certificate the server presented.
pub struct TlsAnswer {
    pub answer: Answer,
    pub version: http::Version,
    pub server_cert: CertificateDer<'static>,
}

impl TlsClient {
    /// Trusting `ca`, offering `alpn`, presenting `client` when given.
    pub fn new(ca: &TestCa, client: Option<&Issued>, alpn: &[&[u8]]) -> TlsClient {
        let mut roots = rustls::RootCertStore::empty();
        roots.add(ca.issuer.der().clone()).unwrap();
        let builder = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots);
        let mut config = match client {
            Some(c) => builder
                .with_client_auth_cert(
                    vec![c.der.clone()],
                    PrivateKeyDer::from_pem_slice(c.key_pem.as_bytes()).unwrap(),
                )
                .unwrap(),
            None => builder.with_no_client_auth(),
        };
        config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
        // Every connection makes a full handshake: a resumed session would show the
        // certificate of the session it resumes, not the one the server holds now.
        config.resumption = rustls::client::Resumption::disabled();
        TlsClient {
            config: Arc::new(config),
        }
    }

    /// Connects and makes the handshake for `localhost`.
    pub async fn connect(
        &self,
        addr: SocketAddr,
    ) -> std::io::Result<tokio_rustls::client::TlsStream<TcpStream>> {
        let tcp = TcpStream::connect(addr).await?;
        tokio_rustls::TlsConnector::from(self.config.clone())
            .connect(ServerName::try_from("localhost").unwrap(), tcp)
            .await
    }

    /// Sends `request` (its URI absolute) on a fresh connection, as HTTP/2 when ALPN
    /// agreed on `h2`, else HTTP/1.1.
    pub async fn send(
        &self,
        addr: SocketAddr,
        request: Request<Full<Bytes>>,
    ) -> Result<TlsAnswer, Box<dyn std::error::Error + Send + Sync>> {
        let tls = self.connect(addr).await?;
        exchange(tls, request).await
    }

    /// A SOAP POST of `body` to `path` at `https://localhost:{port}`.
    pub async fn post(
        &self,
        addr: SocketAddr,
        path: &str,
        version: SoapVersion,
        body: impl Into<Bytes>,
    ) -> Result<TlsAnswer, Box<dyn std::error::Error + Send + Sync>> {
        let mut request = soap_request(addr, path, version, body);
        *request.uri_mut() = format!("https://localhost:{}{path}", addr.port())
            .parse()
            .unwrap();
        request.headers_mut().insert(
            "host",
            format!("localhost:{}", addr.port()).parse().unwrap(),
        );
        self.send(addr, request).await
    }

    /// `GET path` at `https://localhost:{port}`.
    pub async fn get(
        &self,
        addr: SocketAddr,
        path: &str,
    ) -> Result<TlsAnswer, Box<dyn std::error::Error + Send + Sync>> {
        let request = Request::get(format!("https://localhost:{}{path}", addr.port()))
            .header("host", format!("localhost:{}", addr.port()))
            .body(Full::new(Bytes::new()))
            .unwrap();
        self.send(addr, request).await
    }
}

/// Sends `request` (its URI absolute) on `tls`, as HTTP/2 when ALPN agreed on `h2`, else
/// HTTP/1.1.
pub async fn exchange(
    tls: tokio_rustls::client::TlsStream<TcpStream>,
    request: Request<Full<Bytes>>,
) -> Result<TlsAnswer, Box<dyn std::error::Error + Send + Sync>> {
    let server_cert = tls
        .get_ref()
        .1
        .peer_certificates()
        .and_then(|c| c.first())
        .cloned()
        .ok_or("no server certificate")?;
    let h2 = tls.get_ref().1.alpn_protocol() == Some(b"h2".as_slice());
    let io = TokioIo::new(tls);
    let mut request = request;
    let response = if h2 {
        *request.version_mut() = http::Version::HTTP_2;
        request.headers_mut().remove("host");
        let (mut sender, conn) =
            hyper::client::conn::http2::handshake(TokioExecutor::new(), io).await?;
        tokio::spawn(conn);
        sender.send_request(request).await?
    } else {
        let (mut sender, conn) = hyper::client::conn::http1::handshake(io).await?;
        tokio::spawn(conn);
        sender.send_request(request).await?
    };
    let version = response.version();
    Ok(TlsAnswer {
        answer: collect(response).await,
        version,
        server_cert,
    })
}

/// `request` addressed to `https://localhost:{port}` (URI and Host).
pub fn to_localhost(mut request: Request<Full<Bytes>>, port: u16) -> Request<Full<Bytes>> {
    let path = request
        .uri()
        .path_and_query()
        .map_or("/", |p| p.as_str())
        .to_owned();
    *request.uri_mut() = format!("https://localhost:{port}{path}").parse().unwrap();
    request
        .headers_mut()
        .insert("host", format!("localhost:{port}").parse().unwrap());
    request
}
