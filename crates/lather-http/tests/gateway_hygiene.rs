//! What a gateway shows its clients: no hop-by-hop or policy-removed backend headers, the
//! policy's own headers, no backend URL in a fault, and a WSDL address that a hostile
//! `Host` cannot choose.

use crate::support;

use bytes::Bytes;
use http::{Request, StatusCode};
use http_body_util::Full;
use hyper_util::rt::{TokioExecutor, TokioIo};
use lather_envelope::{FaultKind, SoapVersion};
use std::net::SocketAddr;
use support::*;
use tokio::net::TcpListener;

const ANSWER: &str = r#"<s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope"><s:Body><ok/></s:Body></s:Envelope>"#;

/// A backend whose answers carry identifying, hop-by-hop and `Connection`-named headers.
async fn chatty_backend() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let svc = hyper::service::service_fn(|_req| async {
                    let mut r =
                        http::Response::new(Full::new(Bytes::from_static(ANSWER.as_bytes())));
                    let h = r.headers_mut();
                    for (n, v) in [
                        ("content-type", "application/soap+xml; charset=utf-8"),
                        ("server", "Apache-Coyote/1.1 (internal-host-7)"),
                        ("x-powered-by", "Servlet/3.0"),
                        ("set-cookie", "JSESSIONID=abc; Path=/ws"),
                        ("connection", "x-backend-hop"),
                        ("x-backend-hop", "secret"),
                        ("keep-alive", "timeout=5"),
                        ("proxy-connection", "keep-alive"),
                        ("x-frame-options", "ALLOWALL"),
                        ("x-kept", "yes"),
                    ] {
                        h.append(n, v.parse().unwrap());
                    }
                    Ok::<_, std::convert::Infallible>(r)
                });
                let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(stream), svc)
                    .await;
            });
        }
    });
    addr
}

#[tokio::test]
async fn hop_by_hop_and_identifying_backend_headers_are_not_passed() {
    let backend = chatty_backend().await;
    let gw = TestServer::start(&gateway_service(&[format!("http://{backend}/ws")], "")).await;
    let answer = call_gateway(gw.addr).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.text());
    assert_eq!(answer.text(), ANSWER);
    let h = &answer.headers;
    for gone in [
        "server",
        "x-powered-by",
        "x-backend-hop",
        "keep-alive",
        "proxy-connection",
    ] {
        assert!(!h.contains_key(gone), "{gone} passed: {h:?}");
    }
    assert!(
        h.get_all("connection")
            .iter()
            .all(|v| !v.to_str().unwrap().contains("x-backend-hop")),
        "{h:?}"
    );
    // By default cookies and the backend's other headers pass.
    assert_eq!(h["set-cookie"], "JSESSIONID=abc; Path=/ws");
    assert_eq!(h["x-kept"], "yes");
    assert_eq!(h["x-frame-options"], "ALLOWALL");
}

#[tokio::test]
async fn the_service_policy_removes_and_sets_headers() {
    let backend = chatty_backend().await;
    let policy = "response_headers_remove = [\"Set-Cookie\", \"X-Kept\"]\nresponse_headers_set = { \"X-Frame-Options\" = \"DENY\", \"X-Content-Type-Options\" = \"nosniff\" }\n";
    let gw = TestServer::start(&gateway_service(&[format!("http://{backend}/ws")], policy)).await;
    let answer = call_gateway(gw.addr).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.text());
    let h = &answer.headers;
    assert!(!h.contains_key("set-cookie"), "{h:?}");
    assert!(!h.contains_key("x-kept"), "{h:?}");
    assert!(!h.contains_key("x-backend-hop"), "{h:?}");
    // An explicit list replaces the default one: Server passes now.
    assert!(h.contains_key("server"), "{h:?}");
    assert_eq!(h.get_all("x-frame-options").iter().count(), 1);
    assert_eq!(h["x-frame-options"], "DENY");
    assert_eq!(h["x-content-type-options"], "nosniff");
}

#[tokio::test]
async fn faults_name_backends_by_place_not_by_url() {
    // All down: refused, counted by place.
    let d1 = closed_port().await;
    let d2 = closed_port().await;
    let gw = TestServer::start(&gateway_service(
        &[
            format!("http://{d1}/internal-a"),
            format!("http://{d2}/internal-b"),
        ],
        "",
    ))
    .await;
    let answer = call_gateway(gw.addr).await;
    answer.assert_fault(FaultKind::UpstreamUnavailable, SoapVersion::V12);
    let text = answer.text();
    assert!(
        text.contains("backend 1 of 2") && text.contains("backend 2 of 2"),
        "{text}"
    );
    assert!(text.to_lowercase().contains("refused"), "{text}");
    for secret in [
        d1.to_string(),
        d2.to_string(),
        "internal-a".into(),
        "127.0.0.1".into(),
    ] {
        assert!(!text.contains(&secret), "{secret} in {text}");
    }
    // Too slow: the timeout fault names the place and the limit only.
    let slow = fixed_backend(200, "text/xml", "<late/>", 10_000).await;
    let gw = TestServer::start(
        &gateway_service(&[format!("http://{slow}/internal-slow")], "")
            .replace("timeout_ms = 5000", "timeout_ms = 200"),
    )
    .await;
    let answer = call_gateway(gw.addr).await;
    answer.assert_fault(FaultKind::UpstreamTimeout, SoapVersion::V12);
    let text = answer.text();
    assert!(
        text.contains("backend 1 of 1 did not answer within 200 ms"),
        "{text}"
    );
    assert!(
        !text.contains(&slow.to_string()) && !text.contains("internal-slow"),
        "{text}"
    );
    // The WSDL of a backend that has none.
    let none = fixed_backend(404, "text/plain", "no", 0).await;
    let gw = TestServer::start(&gateway_service(&[format!("http://{none}/internal-w")], "")).await;
    let answer = get(gw.addr, "/gw?wsdl").await;
    answer.assert_fault(FaultKind::UpstreamFailed, SoapVersion::V11);
    let text = answer.text();
    assert!(text.contains("backend 1 of 1"), "{text}");
    assert!(
        !text.contains(&none.to_string()) && !text.contains("internal-w"),
        "{text}"
    );
}

async fn wsdl_with_host(addr: SocketAddr, path: &str, host: &str) -> Answer {
    // Origin form, so the `Host` header is all the server has.
    let req = Request::get(format!("{path}?wsdl"))
        .header("host", host)
        .body(Full::new(Bytes::new()))
        .unwrap();
    send(addr, req).await
}

#[tokio::test]
async fn a_hostile_host_never_reaches_the_wsdl() {
    let s = TestServer::echo().await;
    for host in [
        "evil.example/x\"<",
        "user@evil.example",
        "evil example",
        "evil:99999",
    ] {
        // The edge refuses a Host whose syntax is not host[:port] before routing (RFC 9112
        // §3.2); one that passes it but is no usable authority (a port past 65535) is not
        // used for the WSDL's address.
        let answer = wsdl_with_host(s.addr, "/echo", host).await;
        let text = answer.text();
        if answer.status == StatusCode::BAD_REQUEST {
            assert!(text.contains(r#"name="BadHost""#), "{host}: {text}");
            assert!(!text.contains("location="), "{host}: {text}");
            continue;
        }
        assert_eq!(answer.status, StatusCode::OK, "{host}: {text}");
        assert!(!text.contains("evil"), "{host}: {text}");
        let own = format!(r#"location="http://{}/echo""#, s.addr);
        assert_eq!(text.matches(&own).count(), 2, "{host}: {text}");
    }
    // A valid Host is still used (a client behind a name reaches the name).
    let answer = wsdl_with_host(s.addr, "/echo", "ws.example.com:8080").await;
    assert!(
        answer
            .text()
            .contains(r#"location="http://ws.example.com:8080/echo""#)
    );
}

#[tokio::test]
async fn a_configured_public_url_wins_over_the_host() {
    let s = TestServer::start(
        "[server]\nlisten = \"127.0.0.1:0\"\npublic_url = \"https://ws.example.com\"\n[[service]]\nname = \"echo\"\npath = \"/echo\"\nbuiltin = \"echo\"\n[[service]]\nname = \"own\"\npath = \"/own\"\nbuiltin = \"echo\"\npublic_url = \"https://other.example/svc\"\n",
    )
    .await;
    for host in ["evil.example", "evil.example:8443"] {
        let text = wsdl_with_host(s.addr, "/echo", host)
            .await
            .text()
            .to_owned();
        assert_eq!(
            text.matches(r#"location="https://ws.example.com/echo""#)
                .count(),
            2,
            "{text}"
        );
        let text = wsdl_with_host(s.addr, "/own", host).await.text().to_owned();
        assert_eq!(
            text.matches(r#"location="https://other.example/svc""#)
                .count(),
            2,
            "{text}"
        );
    }
    // Through a gateway the backend's addresses are rewritten to the public URL too.
    let backend = TestServer::echo().await;
    let gw = TestServer::start(&gateway_service(
        &[backend.url("/echo")],
        "public_url = \"https://gw.example/gw\"\n",
    ))
    .await;
    let text = wsdl_with_host(gw.addr, "/gw", "evil.example")
        .await
        .text()
        .to_owned();
    assert_eq!(
        text.matches(r#"location="https://gw.example/gw""#).count(),
        2,
        "{text}"
    );
}

/// A UTF-16 request (either byte order, with a byte order mark and `charset=utf-16`) is
/// answered, and a gateway forwards it as UTF-8, saying so.
#[tokio::test]
async fn utf16_requests_are_answered_and_forwarded_as_utf8() {
    let s = TestServer::echo().await;
    let backend = TestServer::echo().await;
    let gw = TestServer::start(&gateway_service(&[backend.url("/echo")], "")).await;
    for version in [SoapVersion::V11, SoapVersion::V12] {
        let text = envelope(version, "", ECHO_PAYLOAD).replacen("UTF-8", "UTF-16", 1);
        let le: Vec<u8> = [0xFF, 0xFE]
            .into_iter()
            .chain(text.encode_utf16().flat_map(u16::to_le_bytes))
            .collect();
        let be: Vec<u8> = [0xFE, 0xFF]
            .into_iter()
            .chain(text.encode_utf16().flat_map(u16::to_be_bytes))
            .collect();
        for (addr, path) in [(s.addr, "/echo"), (gw.addr, "/gw")] {
            for body in [&le, &be] {
                let mut req = soap_request(addr, path, version, body.clone());
                let ct = req.headers()["content-type"]
                    .to_str()
                    .unwrap()
                    .replace("charset=utf-8", "charset=utf-16");
                req.headers_mut()
                    .insert("content-type", ct.parse().unwrap());
                let answer = send(addr, req).await;
                assert_eq!(answer.status, StatusCode::OK, "{path}: {}", answer.text());
                assert!(
                    answer.text().contains("hello &amp; welcome"),
                    "{}",
                    answer.text()
                );
                let ct = answer.headers["content-type"].to_str().unwrap();
                assert!(ct.contains("utf-8"), "{ct}");
            }
        }
    }
}
