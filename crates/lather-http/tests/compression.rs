//! Answers compressed for clients that ask: gzip above `compress_min_bytes` when
//! `Accept-Encoding` takes it, the same envelope once decompressed; never below the
//! threshold, never without the header or with `q=0`, never when switched off, never twice.

use crate::support;

use bytes::Bytes;
use flate2::read::GzDecoder;
use http::Request;
use http_body_util::Full;
use lather_envelope::SoapVersion;
use std::io::Read as _;
use support::*;

/// An echo request whose answer is about `text_bytes` long.
fn echo_request(
    addr: std::net::SocketAddr,
    text_bytes: usize,
    accept: Option<&str>,
) -> Request<Full<Bytes>> {
    let text: String = "lather ".repeat(text_bytes / 7 + 1);
    let payload = format!(r#"<ns:echo xmlns:ns="urn:lather:echo"><text>{text}</text></ns:echo>"#);
    let mut req = soap_request(
        addr,
        "/echo",
        SoapVersion::V12,
        envelope(SoapVersion::V12, "", &payload),
    );
    if let Some(accept) = accept {
        req.headers_mut()
            .insert("accept-encoding", accept.parse().unwrap());
    }
    req
}

fn gunzip(body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    GzDecoder::new(body).read_to_end(&mut out).unwrap();
    out
}

#[tokio::test]
async fn a_large_answer_is_gzipped_for_a_client_that_asks_and_decompresses_to_the_same() {
    let server = TestServer::echo().await;
    let plain = send(server.addr, echo_request(server.addr, 16 * 1024, None)).await;
    assert_eq!(plain.status, 200);
    assert!(plain.headers.get("content-encoding").is_none());
    let gzipped = send(
        server.addr,
        echo_request(server.addr, 16 * 1024, Some("gzip, deflate")),
    )
    .await;
    assert_eq!(gzipped.status, 200);
    assert_eq!(gzipped.headers["content-encoding"], "gzip");
    assert_eq!(gzipped.headers["vary"], "accept-encoding");
    assert_eq!(gunzip(&gzipped.body), plain.body.to_vec());
    assert!(
        gzipped.body.len() * 10 < plain.body.len(),
        "{} of {}",
        gzipped.body.len(),
        plain.body.len()
    );
}

#[tokio::test]
async fn small_answers_refusals_and_a_server_that_does_not_compress_go_plain() {
    let server = TestServer::echo().await;
    for (size, accept) in [
        (100, Some("gzip")),
        (16 * 1024, Some("gzip;q=0")),
        (16 * 1024, Some("br")),
        (16 * 1024, None),
    ] {
        let answer = send(server.addr, echo_request(server.addr, size, accept)).await;
        assert_eq!(answer.status, 200);
        assert!(
            answer.headers.get("content-encoding").is_none(),
            "{size} bytes, {accept:?}: compressed"
        );
        answer.envelope();
    }
    let off = TestServer::start(
        "[server]\nlisten = \"127.0.0.1:0\"\ncompress_responses = false\n[[service]]\nname = \"echo\"\npath = \"/echo\"\nbuiltin = \"echo\"\n",
    )
    .await;
    let answer = send(off.addr, echo_request(off.addr, 16 * 1024, Some("gzip"))).await;
    assert!(answer.headers.get("content-encoding").is_none());
    let low = TestServer::start(
        "[server]\nlisten = \"127.0.0.1:0\"\ncompress_min_bytes = 10\n[[service]]\nname = \"echo\"\npath = \"/echo\"\nbuiltin = \"echo\"\n",
    )
    .await;
    let answer = send(low.addr, echo_request(low.addr, 100, Some("gzip"))).await;
    assert_eq!(answer.headers["content-encoding"], "gzip");
}

#[tokio::test]
async fn an_answer_already_encoded_by_the_backend_is_not_compressed_again() {
    // A backend answering with its own gzip body, passed through by a gateway.
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    std::io::Write::write_all(&mut encoder, "x".repeat(4096).as_bytes()).unwrap();
    let body: &'static [u8] = Box::leak(encoder.finish().unwrap().into_boxed_slice());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let backend = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let svc = hyper::service::service_fn(move |_req| async move {
                    let mut r = http::Response::new(Full::new(Bytes::from_static(body)));
                    r.headers_mut()
                        .insert("content-type", "application/soap+xml".parse().unwrap());
                    r.headers_mut()
                        .insert("content-encoding", "gzip".parse().unwrap());
                    Ok::<_, std::convert::Infallible>(r)
                });
                let _ = hyper_util::server::conn::auto::Builder::new(
                    hyper_util::rt::TokioExecutor::new(),
                )
                .serve_connection(hyper_util::rt::TokioIo::new(stream), svc)
                .await;
            });
        }
    });
    let gateway = TestServer::start(&format!(
        "[[service]]\nname = \"echo\"\npath = \"/echo\"\nupstream = [\"http://{backend}/\"]\n"
    ))
    .await;
    let answer = send(gateway.addr, echo_request(gateway.addr, 100, Some("gzip"))).await;
    assert_eq!(answer.headers["content-encoding"], "gzip");
    assert_eq!(&answer.body[..], body, "compressed a second time");
}
