//! lather's own outbound calls over TLS: event deliveries and SubscriptionEnd to
//! `https://` sinks, the `notify` handler's notifications, asynchronous answers to an `https://` ReplyTo, and lather-client
//! calling an `https://` service — each trusting a private CA through
//! `[server] outbound_ca_file` (or `ClientBuilder::tls`), and refusing a server whose
//! certificate comes from another CA. Certificates are made at test time.

use crate::support;

use bytes::Bytes;
use http::Request;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::{TokioExecutor, TokioIo};
use lather_envelope::{SoapVersion, WSA10_NS};
use rustls::pki_types::PrivateKeyDer;
use rustls::pki_types::pem::PemObject;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use support::pki::{Issued, TestCa, scratch, write};
use support::*;
use tokio::net::TcpListener;
use tokio::sync::mpsc;

const WSE11: &str = "http://www.w3.org/2011/03/ws-evt";

/// What an HTTPS sink received: the path and the body.
type Got = (String, String);

/// An HTTPS sink serving `cert` on loopback: answers 202 and reports every POST.
async fn tls_sink(cert: &Issued) -> (SocketAddr, mpsc::UnboundedReceiver<Got>) {
    let key = PrivateKeyDer::from_pem_slice(cert.key_pem.as_bytes()).unwrap();
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(vec![cert.der.clone()], key)
    .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let (acceptor, tx) = (acceptor.clone(), tx.clone());
            tokio::spawn(async move {
                // A client that refuses the certificate ends here.
                let Ok(tls) = acceptor.accept(stream).await else {
                    return;
                };
                let svc = hyper::service::service_fn(move |req: Request<hyper::body::Incoming>| {
                    let tx = tx.clone();
                    async move {
                        let path = req.uri().path().to_owned();
                        let body = req.into_body().collect().await.unwrap().to_bytes();
                        let _ = tx.send((path, String::from_utf8_lossy(&body).into_owned()));
                        let mut r = http::Response::new(Full::new(Bytes::new()));
                        *r.status_mut() = http::StatusCode::ACCEPTED;
                        Ok::<_, std::convert::Infallible>(r)
                    }
                });
                let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(tls), svc)
                    .await;
            });
        }
    });
    (addr, rx)
}

async fn next(rx: &mut mpsc::UnboundedReceiver<Got>, within: Duration) -> Got {
    tokio::time::timeout(within, rx.recv())
        .await
        .expect("a message in time")
        .expect("sink alive")
}

/// `[server]` with `outbound_ca_file` naming `ca`'s certificate (written to `dir`).
fn server_with_ca(dir: &std::path::Path, ca: &TestCa, services: &str) -> String {
    let file = write(dir, "outbound-ca.pem", &ca.pem());
    format!("[server]\nlisten = \"127.0.0.1:0\"\noutbound_ca_file = {file}\n{services}")
}

async fn subscribe(server: &TestServer, notify: &str, end_to: &str) -> Answer {
    let body = format!(
        r#"<wse:Subscribe xmlns:wse="{WSE11}" xmlns:wsa="{WSA10_NS}"><wse:EndTo><wsa:Address>{end_to}</wsa:Address></wse:EndTo><wse:Delivery><wse:NotifyTo><wsa:Address>{notify}</wsa:Address></wse:NotifyTo></wse:Delivery></wse:Subscribe>"#
    );
    let headers = format!(
        r#"<wsa:Action xmlns:wsa="{WSA10_NS}">{WSE11}/Subscribe</wsa:Action><wsa:MessageID xmlns:wsa="{WSA10_NS}">urn:uuid:s</wsa:MessageID><wsa:To xmlns:wsa="{WSA10_NS}">http://x/events</wsa:To>"#
    );
    post_with_action(
        server.addr,
        "/events",
        SoapVersion::V12,
        &format!("{WSE11}/Subscribe"),
        envelope(SoapVersion::V12, &headers, &body),
    )
    .await
}

async fn publish(server: &TestServer, n: u32) {
    let answer = post_with_action(
        server.addr,
        "/events/publish",
        SoapVersion::V12,
        "urn:ev/T",
        envelope(
            SoapVersion::V12,
            "",
            &format!(r#"<ev:T xmlns:ev="urn:ev">{n}</ev:T>"#),
        ),
    )
    .await;
    assert_eq!(answer.status, 200, "{}", answer.text());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_reach_an_https_sink_and_one_of_another_ca_ends_with_delivery_failure() {
    let dir = scratch("outbound-events");
    let ca = TestCa::new("private CA");
    let other = TestCa::new("other CA");
    let (good, mut good_rx) = tls_sink(&ca.server("sink", &[])).await;
    let (end, mut end_rx) = tls_sink(&ca.server("end", &[])).await;
    let (foreign, mut foreign_rx) = tls_sink(&other.server("foreign", &[])).await;
    let server = TestServer::start(&server_with_ca(
        &dir,
        &ca,
        "[[service]]\nname = \"events\"\npath = \"/events\"\nbuiltin = \"event-source\"\nnotify_allow = [\"127.0.0.1\", \"localhost\"]\n",
    ))
    .await;

    // Verified for the URL's host name (localhost) against outbound_ca_file.
    let notify = format!("https://localhost:{}/sink", good.port());
    let end_to = format!("https://127.0.0.1:{}/end", end.port());
    let answer = subscribe(&server, &notify, &end_to).await;
    assert_eq!(answer.status, 200, "{}", answer.text());
    for n in 1..=3 {
        publish(&server, n).await;
    }
    for n in 1..=3 {
        let (path, body) = next(&mut good_rx, Duration::from_secs(10)).await;
        assert_eq!(path, "/sink");
        assert!(body.contains(&format!(">{n}</ev:T>")), "{body}");
    }

    // A sink whose certificate another CA issued is never given a notification: its
    // subscription ends with DeliveryFailure, sent to the (trusted) https EndTo.
    let untrusted = format!("https://127.0.0.1:{}/sink", foreign.port());
    let answer = subscribe(&server, &untrusted, &end_to).await;
    assert_eq!(answer.status, 200, "{}", answer.text());
    publish(&server, 4).await;
    let (path, body) = next(&mut end_rx, Duration::from_secs(20)).await;
    assert_eq!(path, "/end");
    assert!(
        body.contains(&format!("<wse:Status>{WSE11}/DeliveryFailure</wse:Status>")),
        "{body}"
    );
    assert!(foreign_rx.try_recv().is_err(), "the foreign sink got data");
    // The trusted subscription goes on.
    let (_, body) = next(&mut good_rx, Duration::from_secs(10)).await;
    assert!(body.contains(">4</ev:T>"), "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_async_answer_is_posted_to_an_https_reply_to() {
    let dir = scratch("outbound-reply");
    let ca = TestCa::new("private CA");
    let (sink, mut rx) = tls_sink(&ca.server("replies", &[])).await;
    let server = TestServer::start(&server_with_ca(
        &dir,
        &ca,
        "[[service]]\nname = \"echo\"\npath = \"/echo\"\nbuiltin = \"echo\"\nasync_replies = true\nreply_allow = [\"localhost\", \"127.0.0.1\"]\n",
    ))
    .await;
    let reply_to = format!("https://localhost:{}/replies", sink.port());
    let request = envelope(
        SoapVersion::V12,
        &format!(
            r#"<a:Action xmlns:a="{WSA10_NS}">urn:lather:echo#echo</a:Action><a:MessageID xmlns:a="{WSA10_NS}">urn:uuid:tls-1</a:MessageID><a:ReplyTo xmlns:a="{WSA10_NS}"><a:Address>{reply_to}</a:Address></a:ReplyTo>"#
        ),
        r#"<ns:echo xmlns:ns="urn:lather:echo"><text>sealed</text></ns:echo>"#,
    );
    let answer = post(server.addr, "/echo", SoapVersion::V12, request).await;
    assert_eq!(answer.status, 202, "{}", answer.text());
    let (path, body) = next(&mut rx, Duration::from_secs(10)).await;
    assert_eq!(path, "/replies");
    assert!(body.contains("<text>sealed</text>"), "{body}");
    assert!(body.contains("urn:uuid:tls-1</wsa:RelatesTo>"), "{body}");
}

#[tokio::test]
async fn lather_client_calls_an_https_service_it_trusts_and_refuses_another() {
    let dir = scratch("outbound-client");
    let ca = TestCa::new("private CA");
    let server = TestServer::start(&support::pki::tls_server_toml(
        &dir,
        &ca.server("server", &[]),
        "",
        "[[service]]\nname = \"echo\"\npath = \"/echo\"\nbuiltin = \"echo\"\n",
    ))
    .await;
    let url = format!("https://localhost:{}/echo", server.addr.port());
    let call = lather_client::Call::new(
        r#"<e:echo xmlns:e="urn:lather:echo"><text>over tls</text></e:echo>"#,
    )
    .action("urn:lather:echo#echo");

    let ca_file = dir.join("client-ca.pem");
    std::fs::write(&ca_file, ca.pem()).unwrap();
    let trusted = lather_client::OutboundTls::with_ca_file(ca_file.to_str().unwrap()).unwrap();
    let client = lather_client::Client::builder()
        .request_timeout(Duration::from_secs(10))
        .tls(trusted)
        .build()
        .unwrap();
    let answer = client.call(&url, &call).await.unwrap();
    let text = String::from_utf8_lossy(&answer.body()).into_owned();
    assert!(text.contains("<text>over tls</text>"), "{text}");

    // The system's CAs alone do not trust the private CA.
    let plain = lather_client::Client::builder()
        .request_timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    let err = plain.call(&url, &call).await.unwrap_err();
    assert!(
        matches!(err, lather_client::ClientError::Connect { .. }),
        "{err:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_notify_handler_posts_to_an_https_sink_and_fails_on_one_of_another_ca() {
    let dir = scratch("outbound-notify");
    let ca = TestCa::new("private CA");
    let other = TestCa::new("other CA");
    let (sink, mut rx) = tls_sink(&ca.server("sink", &[])).await;
    let (foreign, mut foreign_rx) = tls_sink(&other.server("foreign", &[])).await;
    let server = TestServer::start(&server_with_ca(
        &dir,
        &ca,
        &format!(
            "[handlers.trusted]\nkind = \"notify\"\nsink = \"https://localhost:{}/n\"\ntimeout_ms = 5000\n\
             [handlers.untrusted]\nkind = \"notify\"\nsink = \"https://localhost:{}/n\"\ntimeout_ms = 5000\n\
             [[service]]\nname = \"a\"\npath = \"/a\"\nbuiltin = \"echo\"\nrequest = [[\"trusted\"]]\n\
             [[service]]\nname = \"b\"\npath = \"/b\"\nbuiltin = \"echo\"\nrequest = [[\"untrusted\"]]\n",
            sink.port(),
            foreign.port()
        ),
    ))
    .await;
    let body = envelope(SoapVersion::V12, "", ECHO_PAYLOAD);
    let answer = post(server.addr, "/a", SoapVersion::V12, body.clone()).await;
    assert_eq!(answer.status, 200, "{}", answer.text());
    let (path, note) = next(&mut rx, Duration::from_secs(10)).await;
    assert_eq!(path, "/n");
    assert!(note.contains("<n:Service>a</n:Service>"), "{note}");

    // A sink whose certificate another CA issued: the handler fails, naming its sink.
    let answer = post(server.addr, "/b", SoapVersion::V12, body).await;
    answer.assert_fault(lather_envelope::FaultKind::HandlerFailed, SoapVersion::V12);
    let reason = answer.text();
    assert!(
        reason.contains(&format!("localhost:{}/n", foreign.port()))
            && reason.contains("certificate"),
        "{reason}"
    );
    assert!(foreign_rx.try_recv().is_err(), "the foreign sink got data");
}
