//! Every refusal at the HTTP edge is a well-formed Fault in the request's SOAP version,
//! with the catalogue's status — never a panic or a dropped connection.

use crate::support;

use bytes::Bytes;
use flate2::Compression;
use flate2::write::GzEncoder;
use http::Request;
use http_body_util::Full;
use lather_envelope::{FaultKind, SoapVersion};
use std::io::Write;
use support::*;

const SMALL_LIMITS: &str = r#"[server]
listen = "127.0.0.1:0"
max_message_bytes = 65536
max_depth = 16
max_attributes = 8

[[service]]
name = "echo"
path = "/echo"
builtin = "echo"
"#;

async fn server() -> TestServer {
    TestServer::start(SMALL_LIMITS).await
}

/// Posts `body` in both versions and checks the fault kind each time.
async fn refused_in_both_versions(
    server: &TestServer,
    body: &dyn Fn(SoapVersion) -> String,
    kind: FaultKind,
) {
    for version in [SoapVersion::V11, SoapVersion::V12] {
        let answer = post(server.addr, "/echo", version, body(version)).await;
        answer.assert_fault(kind, version);
    }
}

#[tokio::test]
async fn malformed_xml() {
    let s = server().await;
    let cases: [&dyn Fn(SoapVersion) -> String; 4] = [
        &|v| envelope(v, "", "<a><b></a>"),
        &|v| envelope(v, "", "<a>&undefined;</a>"),
        &|v| envelope(v, "", "<a x='1' x='2'/>"),
        &|v| envelope(v, "", "<a>").replace("</s:Envelope>", ""),
    ];
    for case in cases {
        refused_in_both_versions(&s, case, FaultKind::MalformedXml).await;
    }
}

#[tokio::test]
async fn doctype_and_entities() {
    let s = server().await;
    let bomb = |v: SoapVersion| {
        format!(
            r#"<?xml version="1.0"?><!DOCTYPE s:Envelope [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]>{}"#,
            envelope(v, "", "<x>&b;</x>")
                .trim_start_matches(r#"<?xml version="1.0" encoding="UTF-8"?>"#)
        )
    };
    refused_in_both_versions(&s, &bomb, FaultKind::DoctypeForbidden).await;
    let xxe = |v: SoapVersion| {
        format!(
            r#"<!DOCTYPE x [<!ENTITY xxe SYSTEM "file:///etc/passwd">]><s:Envelope xmlns:s="{}"><s:Body>&xxe;</s:Body></s:Envelope>"#,
            v.namespace()
        )
    };
    refused_in_both_versions(&s, &xxe, FaultKind::DoctypeForbidden).await;
}

#[tokio::test]
async fn root_that_is_not_an_envelope() {
    let s = server().await;
    refused_in_both_versions(
        &s,
        &|v| {
            format!(
                r#"<s:Letter xmlns:s="{}"><s:Body/></s:Letter>"#,
                v.namespace()
            )
        },
        FaultKind::NotAnEnvelope,
    )
    .await;
}

#[tokio::test]
async fn unknown_envelope_namespace_is_a_version_mismatch() {
    let s = server().await;
    refused_in_both_versions(
        &s,
        &|_| r#"<s:Envelope xmlns:s="urn:soap:3"><s:Body/></s:Envelope>"#.into(),
        FaultKind::VersionMismatch,
    )
    .await;
    // SOAP 1.2 answers carry the Upgrade header listing what lather speaks.
    let answer = post(
        s.addr,
        "/echo",
        SoapVersion::V12,
        r#"<s:Envelope xmlns:s="urn:soap:3"><s:Body/></s:Envelope>"#,
    )
    .await;
    assert!(answer.text().contains("env:Upgrade"), "{}", answer.text());
    // A SOAP 1.2 envelope sent as text/xml (SOAP 1.1) is a mismatch as well.
    let answer = post(
        s.addr,
        "/echo",
        SoapVersion::V11,
        envelope(SoapVersion::V12, "", ECHO_PAYLOAD),
    )
    .await;
    answer.assert_fault(FaultKind::VersionMismatch, SoapVersion::V11);
}

#[tokio::test]
async fn missing_body() {
    let s = server().await;
    refused_in_both_versions(
        &s,
        &|v| {
            format!(
                r#"<s:Envelope xmlns:s="{}"><s:Header/></s:Envelope>"#,
                v.namespace()
            )
        },
        FaultKind::MissingBody,
    )
    .await;
}

#[tokio::test]
async fn nesting_deeper_than_the_limit() {
    let s = server().await;
    let deep = format!("{}{}", "<d>".repeat(40), "</d>".repeat(40));
    refused_in_both_versions(&s, &|v| envelope(v, "", &deep), FaultKind::TooDeep).await;
    let very_deep = format!("{}{}", "<d>".repeat(100_000), "</d>".repeat(10));
    let answer = post(
        s.addr,
        "/echo",
        SoapVersion::V11,
        envelope(SoapVersion::V11, "", &very_deep),
    )
    .await;
    // 700 KB is over the 64 KiB limit: refused before parsing.
    answer.assert_fault(FaultKind::MessageTooLarge, SoapVersion::V11);
}

#[tokio::test]
async fn more_attributes_than_the_limit() {
    let s = server().await;
    let attrs: String = (0..9).map(|i| format!(" a{i}='{i}'")).collect();
    refused_in_both_versions(
        &s,
        &|v| envelope(v, "", &format!("<x{attrs}/>")),
        FaultKind::TooManyAttributes,
    )
    .await;
}

#[tokio::test]
async fn oversize_bodies_with_and_without_content_length() {
    let s = server().await;
    let big = "x".repeat(70_000);
    refused_in_both_versions(
        &s,
        &|v| envelope(v, "", &format!("<a>{big}</a>")),
        FaultKind::MessageTooLarge,
    )
    .await;
    // Streamed (chunked) without Content-Length: refused once the limit is crossed.
    let chunks = futures_util::stream::iter((0..20).map(|_| {
        Ok::<_, std::convert::Infallible>(hyper::body::Frame::data(Bytes::from(vec![b' '; 8192])))
    }));
    let body = http_body_util::StreamBody::new(chunks);
    let req = Request::post(s.url("/echo"))
        .header("host", s.addr.to_string())
        .header("content-type", "text/xml")
        .header("soapaction", "\"\"")
        .body(body)
        .unwrap();
    let stream = tokio::net::TcpStream::connect(s.addr).await.unwrap();
    let (mut sender, conn) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
            .await
            .unwrap();
    tokio::spawn(conn);
    let answer = collect(sender.send_request(req).await.unwrap()).await;
    answer.assert_fault(FaultKind::MessageTooLarge, SoapVersion::V11);
}

#[tokio::test]
async fn bytes_that_are_not_utf8() {
    let s = server().await;
    for version in [SoapVersion::V11, SoapVersion::V12] {
        let mut body = envelope(version, "", "<a>caf</a>").into_bytes();
        let at = body.windows(3).position(|w| w == b"caf").unwrap() + 3;
        body.insert(at, 0xE9); // Latin-1 é
        post(s.addr, "/echo", version, body)
            .await
            .assert_fault(FaultKind::NotUtf8, version);
        let declared = envelope(version, "", "<a/>").replace("UTF-8", "ISO-8859-1");
        post(s.addr, "/echo", version, declared)
            .await
            .assert_fault(FaultKind::NotUtf8, version);
    }
}

#[tokio::test]
async fn wrong_content_types() {
    let s = server().await;
    for ct in [
        "application/json",
        "text/plain",
        "application/xml",
        // UTF-16 is accepted (WS-I BP; see gateway_hygiene.rs), UTF-32 is not.
        "text/xml; charset=utf-32",
    ] {
        let mut req = soap_request(
            s.addr,
            "/echo",
            SoapVersion::V11,
            envelope(SoapVersion::V11, "", ECHO_PAYLOAD),
        );
        req.headers_mut()
            .insert("content-type", ct.parse().unwrap());
        send(s.addr, req)
            .await
            .assert_fault(FaultKind::UnsupportedMediaType, SoapVersion::V11);
    }
    let mut req = soap_request(
        s.addr,
        "/echo",
        SoapVersion::V11,
        envelope(SoapVersion::V11, "", ECHO_PAYLOAD),
    );
    req.headers_mut().remove("content-type");
    send(s.addr, req)
        .await
        .assert_fault(FaultKind::UnsupportedMediaType, SoapVersion::V11);
    let mut req = soap_request(
        s.addr,
        "/echo",
        SoapVersion::V11,
        envelope(SoapVersion::V11, "", ECHO_PAYLOAD),
    );
    req.headers_mut().remove("soapaction");
    send(s.addr, req)
        .await
        .assert_fault(FaultKind::MissingSoapAction, SoapVersion::V11);
}

#[tokio::test]
async fn compressed_bodies_are_bounded() {
    let s = server().await;
    let mut gz = GzEncoder::new(Vec::new(), Compression::best());
    gz.write_all(envelope(SoapVersion::V12, "", "").as_bytes())
        .unwrap();
    gz.write_all(&vec![b' '; 2_000_000]).unwrap();
    let bomb = gz.finish().unwrap();
    assert!(bomb.len() < 65_536, "the bomb itself fits the limit");
    let mut req = soap_request(s.addr, "/echo", SoapVersion::V12, Bytes::from(bomb));
    req.headers_mut()
        .insert("content-encoding", "gzip".parse().unwrap());
    send(s.addr, req)
        .await
        .assert_fault(FaultKind::DecodedTooLarge, SoapVersion::V12);
    let mut req = soap_request(s.addr, "/echo", SoapVersion::V12, "whatever");
    req.headers_mut()
        .insert("content-encoding", "br".parse().unwrap());
    send(s.addr, req)
        .await
        .assert_fault(FaultKind::UnsupportedContentEncoding, SoapVersion::V12);
    let mut req = soap_request(s.addr, "/echo", SoapVersion::V12, "not gzip at all");
    req.headers_mut()
        .insert("content-encoding", "gzip".parse().unwrap());
    send(s.addr, req)
        .await
        .assert_fault(FaultKind::BadRequestBody, SoapVersion::V12);
}

#[tokio::test]
async fn unknown_paths_and_methods() {
    let s = server().await;
    post(
        s.addr,
        "/nowhere",
        SoapVersion::V12,
        envelope(SoapVersion::V12, "", ECHO_PAYLOAD),
    )
    .await
    .assert_fault(FaultKind::NoSuchService, SoapVersion::V12);
    let answer = get(s.addr, "/echo").await;
    answer.assert_fault(FaultKind::MethodNotAllowed, SoapVersion::V11);
    assert!(answer.headers.contains_key("allow"));
    let req = Request::put(s.url("/echo"))
        .header("host", s.addr.to_string())
        .body(Full::new(Bytes::new()))
        .unwrap();
    send(s.addr, req)
        .await
        .assert_fault(FaultKind::MethodNotAllowed, SoapVersion::V11);
}

#[tokio::test]
async fn the_server_keeps_serving_after_every_refusal() {
    let s = server().await;
    let garbage: [&[u8]; 4] = [b"", b"\x00\x01\x02", b"<", b"\xff\xfe<\x00a\x00/\x00>\x00"];
    for body in garbage {
        let answer = post(s.addr, "/echo", SoapVersion::V11, Bytes::from_static(body)).await;
        assert!(answer.status.is_server_error() || answer.status.is_client_error());
        assert!(answer.envelope().is_fault());
    }
    let ok = post(
        s.addr,
        "/echo",
        SoapVersion::V11,
        envelope(SoapVersion::V11, "", ECHO_PAYLOAD),
    )
    .await;
    assert_eq!(ok.status, http::StatusCode::OK);
}
