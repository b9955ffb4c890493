//! The echo service over real loopback sockets: both SOAP versions, WS-Addressing,
//! WSDL, keep-alive, h2c, compressed requests, health and metrics.

use crate::support;

use bytes::Bytes;
use flate2::Compression;
use flate2::write::{GzEncoder, ZlibEncoder};
use http::StatusCode;
use hyper_util::rt::{TokioExecutor, TokioIo};
use lather_envelope::{QName, SoapVersion};
use std::io::Write;
use support::*;

#[tokio::test]
async fn echoes_the_payload_in_both_versions() {
    let server = TestServer::echo().await;
    for version in [SoapVersion::V11, SoapVersion::V12] {
        let answer = post(
            server.addr,
            "/echo",
            version,
            envelope(version, "", ECHO_PAYLOAD),
        )
        .await;
        assert_eq!(answer.status, StatusCode::OK, "{}", answer.text());
        let env = answer.envelope();
        assert_eq!(env.version(), version);
        assert_eq!(
            env.operation(),
            Some(&QName::new("urn:lather:echo", "echo"))
        );
        assert_eq!(&env.body()[..], ECHO_PAYLOAD.as_bytes());
        let ct = answer.headers["content-type"].to_str().unwrap();
        assert!(ct.starts_with(version.media_type()), "{ct}");
    }
}

#[tokio::test]
async fn payload_prefixes_declared_on_the_envelope_survive() {
    let server = TestServer::echo().await;
    let request = r#"<soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/" xmlns:q="urn:quotes"><soap:Body><q:get sym="X"/></soap:Body></soap:Envelope>"#;
    let answer = post(server.addr, "/echo", SoapVersion::V11, request).await;
    assert_eq!(answer.status, StatusCode::OK);
    let env = answer.envelope();
    assert_eq!(env.operation(), Some(&QName::new("urn:quotes", "get")));
}

#[tokio::test]
async fn answers_message_id_with_relates_to() {
    let server = TestServer::echo().await;
    for (ns, version) in [
        ("http://www.w3.org/2005/08/addressing", SoapVersion::V12),
        (
            "http://schemas.xmlsoap.org/ws/2004/08/addressing",
            SoapVersion::V11,
        ),
    ] {
        let header =
            format!(r#"<wsa:MessageID xmlns:wsa="{ns}">urn:uuid:6b29fc40</wsa:MessageID>"#);
        let answer = post(
            server.addr,
            "/echo",
            version,
            envelope(version, &header, ECHO_PAYLOAD),
        )
        .await;
        let env = answer.envelope();
        let block = env.header(&QName::new(ns, "RelatesTo")).expect("RelatesTo");
        assert_eq!(env.header_text(block).as_deref(), Some("urn:uuid:6b29fc40"));
    }
    let plain = post(
        server.addr,
        "/echo",
        SoapVersion::V11,
        envelope(SoapVersion::V11, "", ECHO_PAYLOAD),
    )
    .await;
    assert!(plain.envelope().headers().is_empty());
}

#[tokio::test]
async fn serves_its_wsdl() {
    let server = TestServer::echo().await;
    let answer = get(server.addr, "/echo?wsdl").await;
    assert_eq!(answer.status, StatusCode::OK);
    let location = format!(r#"location="http://{}/echo""#, server.addr);
    assert!(answer.text().contains(&location), "{}", answer.text());
    assert!(answer.text().contains("<wsdl:definitions"));
}

#[tokio::test]
async fn keeps_the_connection_alive_across_requests() {
    let server = TestServer::echo().await;
    let stream = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .unwrap();
    tokio::spawn(conn);
    for _ in 0..50 {
        let req = soap_request(
            server.addr,
            "/echo",
            SoapVersion::V11,
            envelope(SoapVersion::V11, "", ECHO_PAYLOAD),
        );
        let answer = collect(sender.send_request(req).await.unwrap()).await;
        assert_eq!(answer.status, StatusCode::OK);
    }
}

#[tokio::test]
async fn speaks_h2c_with_prior_knowledge() {
    let server = TestServer::echo().await;
    let stream = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    let (mut sender, conn) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(stream))
            .await
            .unwrap();
    tokio::spawn(conn);
    let mut pending = Vec::new();
    for _ in 0..10 {
        let req = soap_request(
            server.addr,
            "/echo",
            SoapVersion::V12,
            envelope(SoapVersion::V12, "", ECHO_PAYLOAD),
        );
        pending.push(sender.send_request(req));
    }
    for response in pending {
        let answer = collect(response.await.unwrap()).await;
        assert_eq!(answer.status, StatusCode::OK);
        assert_eq!(answer.envelope().version(), SoapVersion::V12);
    }
}

#[tokio::test]
async fn accepts_gzip_and_deflate_bodies() {
    let server = TestServer::echo().await;
    let plain = envelope(SoapVersion::V11, "", ECHO_PAYLOAD);
    let mut gz = GzEncoder::new(Vec::new(), Compression::default());
    gz.write_all(plain.as_bytes()).unwrap();
    let mut zl = ZlibEncoder::new(Vec::new(), Compression::default());
    zl.write_all(plain.as_bytes()).unwrap();
    for (encoding, body) in [
        ("gzip", gz.finish().unwrap()),
        ("deflate", zl.finish().unwrap()),
    ] {
        let mut req = soap_request(server.addr, "/echo", SoapVersion::V11, Bytes::from(body));
        req.headers_mut()
            .insert("content-encoding", encoding.parse().unwrap());
        let answer = send(server.addr, req).await;
        assert_eq!(
            answer.status,
            StatusCode::OK,
            "{encoding}: {}",
            answer.text()
        );
        assert_eq!(&answer.envelope().body()[..], ECHO_PAYLOAD.as_bytes());
    }
}

#[tokio::test]
async fn health_and_metrics_report_traffic() {
    let server = TestServer::echo().await;
    assert_eq!(get(server.addr, "/health").await.status, StatusCode::OK);
    for _ in 0..3 {
        post(
            server.addr,
            "/echo",
            SoapVersion::V11,
            envelope(SoapVersion::V11, "", ECHO_PAYLOAD),
        )
        .await;
    }
    let mut bad = soap_request(server.addr, "/echo", SoapVersion::V11, "x");
    bad.headers_mut()
        .insert("content-type", "application/json".parse().unwrap());
    send(server.addr, bad).await;
    let text = get(server.addr, "/metrics").await.text().to_owned();
    assert_eq!(
        metric(&text, r#"lather_requests_total{service="echo",code="200"}"#),
        Some(3.0),
        "{text}"
    );
    assert_eq!(
        metric(&text, r#"lather_requests_total{service="echo",code="415"}"#),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        metric(
            &text,
            r#"lather_faults_total{service="echo",fault="UnsupportedMediaType"}"#
        ),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        metric(
            &text,
            r#"lather_request_duration_seconds_count{service="echo"}"#
        ),
        Some(4.0),
        "{text}"
    );
    assert!(
        metric(&text, r#"lather_request_bytes_total{service="echo"}"#).unwrap() > 300.0,
        "{text}"
    );
    assert!(
        metric(&text, r#"lather_response_bytes_total{service="echo"}"#).unwrap() > 300.0,
        "{text}"
    );
    // The /metrics request itself is in flight while rendering.
    assert_eq!(
        metric(&text, "lather_in_flight_requests"),
        Some(1.0),
        "{text}"
    );
}

#[tokio::test]
async fn shuts_down_gracefully_finishing_requests_in_flight() {
    let slow = fixed_backend(200, "text/xml", "<ok/>", 400).await;
    let mut server = TestServer::start(&format!(
        "[[service]]\nname = \"slow\"\npath = \"/slow\"\nupstream = [\"http://{slow}/\"]\n"
    ))
    .await;
    let addr = server.addr;
    let in_flight = tokio::spawn(async move {
        post(
            addr,
            "/slow",
            SoapVersion::V11,
            envelope(SoapVersion::V11, "", ECHO_PAYLOAD),
        )
        .await
    });
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    let done = server.shutdown();
    let answer = in_flight.await.unwrap();
    assert_eq!(answer.status, StatusCode::OK);
    assert_eq!(answer.text(), "<ok/>");
    done.await.unwrap().unwrap();
    assert!(
        tokio::net::TcpStream::connect(addr).await.is_err(),
        "still accepting after shutdown"
    );
}
