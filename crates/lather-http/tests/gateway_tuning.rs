//! Two tuning techniques of the gateway and the WSDL: requests to the upstreams gzip-
//! compressed from a size threshold (`compress_requests`), and WSDL-based load balancing
//! (`wsdl_addresses`): the served WSDL names the addresses in turn, by weight.

use crate::support;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use lather_envelope::SoapVersion;
use std::net::SocketAddr;
use support::*;
use tokio::sync::mpsc;

/// What a backend received: its `Content-Encoding` and its body as sent.
type Seen = (Option<String>, Bytes);

/// A backend answering every request with a fixed SOAP answer, reporting what it got.
async fn recording_backend() -> (SocketAddr, mpsc::UnboundedReceiver<Seen>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let addr = lather_test_util::http::serve(move |req: http::Request<hyper::body::Incoming>| {
        let tx = tx.clone();
        async move {
            let encoding = req
                .headers()
                .get("content-encoding")
                .map(|v| v.to_str().unwrap().to_owned());
            let body = req.into_body().collect().await.unwrap().to_bytes();
            let _ = tx.send((encoding, body));
            let answer = envelope(SoapVersion::V12, "", "<ok/>");
            let mut r = http::Response::new(Full::new(Bytes::from(answer)));
            r.headers_mut().insert(
                "content-type",
                "application/soap+xml; charset=utf-8".parse().unwrap(),
            );
            r
        }
    })
    .await;
    (addr, rx)
}

fn gunzip(body: &[u8]) -> Vec<u8> {
    use std::io::Read as _;
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(body)
        .read_to_end(&mut out)
        .unwrap();
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_from_the_threshold_on_reach_the_upstream_gzipped_and_whole() {
    let (backend, mut seen) = recording_backend().await;
    let server = TestServer::start(&format!(
        "[[service]]\nname = \"g\"\npath = \"/g\"\nupstream = [\"http://{backend}/ws\"]\n\
         compress_requests = true\ncompress_requests_min_bytes = 2048\n"
    ))
    .await;
    for (text_bytes, compressed) in [(100, false), (16 * 1024, true)] {
        let text = "lather ".repeat(text_bytes / 7 + 1);
        let sent = envelope(
            SoapVersion::V12,
            "",
            &format!(r#"<m:put xmlns:m="urn:m"><text>{text}</text></m:put>"#),
        );
        let answer = post(server.addr, "/g", SoapVersion::V12, sent.clone()).await;
        assert_eq!(answer.status, 200, "{}", answer.text());
        let (encoding, body) = seen.recv().await.unwrap();
        if compressed {
            assert_eq!(encoding.as_deref(), Some("gzip"));
            assert!(
                body.len() * 10 < sent.len(),
                "{} of {}",
                body.len(),
                sent.len()
            );
            assert_eq!(gunzip(&body), sent.as_bytes());
        } else {
            assert_eq!(
                encoding, None,
                "a request below the threshold was compressed"
            );
            assert_eq!(body, sent.as_bytes());
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lather_upstream_answers_compressed_requests_as_plain_ones() {
    let echo = TestServer::echo().await;
    let server = TestServer::start(&format!(
        "[[service]]\nname = \"g\"\npath = \"/g\"\nupstream = [\"http://{}/echo\"]\n\
         compress_requests = true\ncompress_requests_min_bytes = 64\n",
        echo.addr
    ))
    .await;
    let text = "x".repeat(4000);
    let payload = format!(r#"<ns:echo xmlns:ns="urn:lather:echo"><text>{text}</text></ns:echo>"#);
    let answer = post(
        server.addr,
        "/g",
        SoapVersion::V12,
        envelope(SoapVersion::V12, "", &payload),
    )
    .await;
    assert_eq!(answer.status, 200, "{}", answer.text());
    assert!(answer.text().contains(&text));
}

#[tokio::test]
async fn the_wsdl_names_the_addresses_in_turn_by_weight() {
    let server = TestServer::start(
        "[[service]]\nname = \"echo\"\npath = \"/echo\"\nbuiltin = \"echo\"\n\
         wsdl_addresses = [{ url = \"http://a.example/echo\", weight = 2 }, \"http://b.example/echo\"]\n",
    )
    .await;
    let mut named = Vec::new();
    for _ in 0..6 {
        let wsdl = get(server.addr, "/echo?wsdl").await;
        assert_eq!(wsdl.status, 200);
        let text = wsdl.text();
        let host = if text.contains("location=\"http://a.example/echo\"") {
            "a"
        } else if text.contains("location=\"http://b.example/echo\"") {
            "b"
        } else {
            panic!("neither address: {text}")
        };
        named.push(host);
    }
    assert_eq!(named, ["a", "b", "a", "a", "b", "a"]);
}
