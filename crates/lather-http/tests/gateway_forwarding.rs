//! What a gateway tells its backend: the client's end-to-end headers and none of the
//! hop-by-hop ones, `Forwarded`/`X-Forwarded-*` by `[server] trusted_proxies`, the
//! service's header rules; the WSDL's imports served through the gateway and only from the
//! backend's origin; prefix services forwarding the rest of the path.

use crate::support;

use bytes::Bytes;
use http::{HeaderMap, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper_util::rt::{TokioExecutor, TokioIo};
use lather_envelope::{FaultKind, SoapVersion};
use std::collections::HashMap;
use std::net::SocketAddr;
use support::*;
use tokio::net::TcpListener;
use tokio::sync::mpsc;

const ANSWER: &str = r#"<s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope"><s:Body><ok/></s:Body></s:Envelope>"#;

/// One request as a backend got it.
#[derive(Debug)]
struct Seen {
    target: String,
    headers: HeaderMap,
}

/// A backend that records every request and answers GETs from `documents` (by path and
/// query, 404 for others; `{self}` in a document is replaced by the backend's address) and
/// POSTs with a SOAP answer.
async fn recording_backend(
    documents: &[(&str, &str)],
) -> (SocketAddr, mpsc::UnboundedReceiver<Seen>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let documents: HashMap<String, String> = documents
        .iter()
        .map(|(k, v)| ((*k).to_owned(), v.replace("{self}", &addr.to_string())))
        .collect();
    let documents = std::sync::Arc::new(documents);
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let (tx, documents) = (tx.clone(), documents.clone());
            tokio::spawn(async move {
                let svc = hyper::service::service_fn(move |req: Request<hyper::body::Incoming>| {
                    let (tx, documents) = (tx.clone(), documents.clone());
                    async move {
                        let target = req
                            .uri()
                            .path_and_query()
                            .map_or("/".to_owned(), |p| p.as_str().to_owned());
                        let _ = tx.send(Seen {
                            target: target.clone(),
                            headers: req.headers().clone(),
                        });
                        let is_get = req.method() == http::Method::GET;
                        let _ = req.into_body().collect().await;
                        let (status, body) = match (is_get, documents.get(&target)) {
                            (false, _) => (200, ANSWER.to_owned()),
                            (true, Some(doc)) => (200, doc.clone()),
                            (true, None) => (404, "not here".to_owned()),
                        };
                        let mut r = http::Response::new(Full::new(Bytes::from(body)));
                        *r.status_mut() = StatusCode::from_u16(status).unwrap();
                        r.headers_mut().insert(
                            "content-type",
                            "application/soap+xml; charset=utf-8".parse().unwrap(),
                        );
                        Ok::<_, std::convert::Infallible>(r)
                    }
                });
                let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(stream), svc)
                    .await;
            });
        }
    });
    (addr, rx)
}

fn gateway(server: &str, path: &str, upstream: &str, extra: &str) -> String {
    format!(
        "[server]\nlisten = \"127.0.0.1:0\"\n{server}\n[[service]]\nname = \"gw\"\npath = \"{path}\"\nupstream = [\"{upstream}\"]\ntimeout_ms = 5000\n{extra}"
    )
}

/// POSTs a SOAP 1.2 request to `path` with `headers` added.
async fn post_with(addr: SocketAddr, path: &str, headers: &[(&str, &str)]) -> Answer {
    let mut request = soap_request(
        addr,
        path,
        SoapVersion::V12,
        envelope(SoapVersion::V12, "", ECHO_PAYLOAD),
    );
    for (name, value) in headers {
        request.headers_mut().append(
            http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
            value.parse().unwrap(),
        );
    }
    send(addr, request).await
}

/// Every value of `name` in `headers`.
fn all(headers: &HeaderMap, name: &str) -> Vec<String> {
    headers
        .get_all(name)
        .iter()
        .map(|v| v.to_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn end_to_end_headers_reach_the_backend_and_hop_by_hop_ones_do_not() {
    let (backend, mut seen) = recording_backend(&[]).await;
    let gw = TestServer::start(&gateway(
        "trusted_proxies = [\"10.0.0.0/8\"]",
        "/gw",
        &format!("http://{backend}/ws"),
        "",
    ))
    .await;
    let answer = post_with(
        gw.addr,
        "/gw",
        &[
            ("connection", "keep-alive, X-Hop"),
            ("x-hop", "secret"),
            ("keep-alive", "timeout=5"),
            ("te", "trailers"),
            ("proxy-authorization", "Basic cHJveHk6cHc="),
            ("lather-priority", "low"),
            ("accept-encoding", "gzip"),
            ("authorization", "Bearer token-1"),
            ("cookie", "session=abc"),
            ("x-custom", "kept"),
            (
                "traceparent",
                "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            ),
            ("tracestate", "vendor=1"),
            ("x-forwarded-for", "6.6.6.6"),
            ("forwarded", "for=6.6.6.6;proto=https"),
            ("x-forwarded-proto", "https"),
            ("x-forwarded-host", "forged.example"),
        ],
    )
    .await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.text());
    let got = seen.try_recv().expect("the backend got the request");
    let h = &got.headers;
    assert_eq!(got.target, "/ws");
    for gone in [
        "x-hop",
        "keep-alive",
        "te",
        "proxy-authorization",
        "lather-priority",
        "accept-encoding",
    ] {
        assert!(!h.contains_key(gone), "{gone} forwarded: {h:?}");
    }
    assert!(
        all(h, "connection").iter().all(|c| !c.contains("X-Hop")),
        "{h:?}"
    );
    assert_eq!(all(h, "authorization"), ["Bearer token-1"]);
    assert_eq!(all(h, "cookie"), ["session=abc"]);
    assert_eq!(all(h, "x-custom"), ["kept"]);
    assert_eq!(all(h, "tracestate"), ["vendor=1"]);
    assert!(h.contains_key("traceparent"), "{h:?}");
    assert_eq!(all(h, "host"), [backend.to_string()]);
    assert_eq!(all(h, "via"), ["1.1 lather"]);
    // The peer (127.0.0.1) is no trusted proxy: what it claimed is replaced.
    assert_eq!(
        all(h, "forwarded"),
        [format!("for=127.0.0.1;proto=http;host=\"{}\"", gw.addr)]
    );
    assert_eq!(all(h, "x-forwarded-for"), ["127.0.0.1"]);
    assert_eq!(all(h, "x-forwarded-proto"), ["http"]);
    assert_eq!(all(h, "x-forwarded-host"), [gw.addr.to_string()]);
}

#[tokio::test]
async fn a_trusted_proxy_chain_is_kept_and_extended() {
    let (backend, mut seen) = recording_backend(&[]).await;
    let gw = TestServer::start(&gateway(
        "trusted_proxies = [\"127.0.0.1\"]",
        "/gw",
        &format!("http://{backend}/ws"),
        "",
    ))
    .await;
    let answer = post_with(
        gw.addr,
        "/gw",
        &[
            ("x-forwarded-for", "198.51.100.7"),
            ("forwarded", "for=198.51.100.7;proto=https"),
            ("x-forwarded-proto", "https"),
            ("x-forwarded-host", "ws.example.com"),
            ("via", "1.1 front"),
        ],
    )
    .await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.text());
    let h = seen
        .try_recv()
        .expect("the backend got the request")
        .headers;
    assert_eq!(all(&h, "x-forwarded-for"), ["198.51.100.7, 127.0.0.1"]);
    assert_eq!(
        all(&h, "forwarded"),
        [format!(
            "for=198.51.100.7;proto=https, for=127.0.0.1;proto=http;host=\"{}\"",
            gw.addr
        )]
    );
    assert_eq!(all(&h, "x-forwarded-proto"), ["https"]);
    assert_eq!(all(&h, "x-forwarded-host"), ["ws.example.com"]);
    assert_eq!(all(&h, "via"), ["1.1 front, 1.1 lather"]);
}

#[tokio::test]
async fn the_service_header_rules_apply_to_requests_and_answers() {
    let (backend, mut seen) = recording_backend(&[]).await;
    let rules = "request_headers_remove = [\"Cookie\", \"X-Forwarded-For\"]\n\
                 request_headers_set = { \"X-Env\" = \"prod\" }\n\
                 request_headers_add = { \"X-Tag\" = \"gw\" }\n\
                 response_headers_add = { \"X-Served-By\" = \"lather\" }\n";
    let gw = TestServer::start(&gateway("", "/gw", &format!("http://{backend}/ws"), rules)).await;
    let answer = post_with(
        gw.addr,
        "/gw",
        &[("cookie", "a=1"), ("x-env", "dev"), ("x-tag", "client")],
    )
    .await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.text());
    assert_eq!(all(&answer.headers, "x-served-by"), ["lather"]);
    let h = seen
        .try_recv()
        .expect("the backend got the request")
        .headers;
    assert!(!h.contains_key("cookie"), "{h:?}");
    assert!(!h.contains_key("x-forwarded-for"), "{h:?}");
    assert!(h.contains_key("forwarded"), "{h:?}");
    assert_eq!(all(&h, "x-env"), ["prod"]);
    assert_eq!(all(&h, "x-tag"), ["client", "gw"]);
}

const WSDL: &str = r#"<?xml version="1.0"?>
<wsdl:definitions xmlns:wsdl="http://schemas.xmlsoap.org/wsdl/" xmlns:soap="http://schemas.xmlsoap.org/wsdl/soap/" xmlns:xsd="http://www.w3.org/2001/XMLSchema">
<wsdl:import namespace="urn:more" location="http://{self}/app/more.wsdl"/>
<wsdl:types><xsd:schema>
<xsd:import namespace="urn:types" schemaLocation="types.xsd"/>
<xsd:import namespace="http://www.w3.org/XML/1998/namespace" schemaLocation="http://www.w3.org/2001/xml.xsd"/>
</xsd:schema></wsdl:types>
<wsdl:service name="S"><wsdl:port name="P"><soap:address location="http://{self}/ws"/></wsdl:port></wsdl:service>
</wsdl:definitions>"#;

const TYPES: &str = r#"<xsd:schema xmlns:xsd="http://www.w3.org/2001/XMLSchema"><xsd:include schemaLocation="../common/base.xsd"/></xsd:schema>"#;

const BASE: &str = r#"<xsd:schema xmlns:xsd="http://www.w3.org/2001/XMLSchema"><xsd:element name="base"/></xsd:schema>"#;

#[tokio::test]
async fn wsdl_imports_are_served_by_the_gateway_and_rewritten_in_turn() {
    let (backend, _seen) = recording_backend(&[
        ("/app/ws?wsdl", WSDL),
        ("/app/types.xsd", TYPES),
        ("/common/base.xsd", BASE),
    ])
    .await;
    let gw = TestServer::start(&gateway("", "/gw", &format!("http://{backend}/app/ws"), "")).await;
    // Relative imports resolve against the WSDL's own URL (`/app/ws?wsdl`).
    let wsdl = get(gw.addr, "/gw?wsdl").await;
    assert_eq!(wsdl.status, StatusCode::OK, "{}", wsdl.text());
    let text = wsdl.text();
    let at = format!("http://{}/gw", gw.addr);
    assert!(
        text.contains(&format!(r#"schemaLocation="{at}?xsd=/app/types.xsd""#)),
        "{text}"
    );
    assert!(
        text.contains(&format!(r#"location="{at}?wsdl=/app/more.wsdl""#)),
        "{text}"
    );
    assert!(
        text.contains(&format!(r#"<soap:address location="{at}"/>"#)),
        "{text}"
    );
    assert!(
        text.contains(r#"schemaLocation="http://www.w3.org/2001/xml.xsd""#),
        "{text}"
    );
    assert!(!text.contains(&backend.to_string()), "{text}");
    // The imported schema, fetched through the gateway, has its own include rewritten.
    let types = get(gw.addr, "/gw?xsd=/app/types.xsd").await;
    assert_eq!(types.status, StatusCode::OK, "{}", types.text());
    assert!(
        types
            .text()
            .contains(&format!(r#"schemaLocation="{at}?xsd=/common/base.xsd""#)),
        "{}",
        types.text()
    );
    let base = get(gw.addr, "/gw?xsd=%2Fcommon%2Fbase.xsd").await;
    assert_eq!(base.status, StatusCode::OK, "{}", base.text());
    assert_eq!(base.text(), BASE);
    // A document the backend does not have.
    get(gw.addr, "/gw?wsdl=/app/more.wsdl")
        .await
        .assert_fault(FaultKind::NoSuchService, SoapVersion::V11);
}

#[tokio::test]
async fn the_public_url_names_the_gateway_in_imports() {
    let (backend, _seen) = recording_backend(&[("/app/ws?wsdl", WSDL)]).await;
    let gw = TestServer::start(&gateway(
        "",
        "/gw",
        &format!("http://{backend}/app/ws"),
        "public_url = \"https://ws.example.com/quotes\"\n",
    ))
    .await;
    let text = get(gw.addr, "/gw?wsdl").await.text().to_owned();
    assert!(
        text.contains(r#"schemaLocation="https://ws.example.com/quotes?xsd=/app/types.xsd""#),
        "{text}"
    );
    assert!(
        text.contains(r#"<soap:address location="https://ws.example.com/quotes"/>"#),
        "{text}"
    );
}

#[tokio::test]
async fn document_values_off_the_backend_origin_are_refused_without_a_fetch() {
    let (backend, mut seen) = recording_backend(&[("/ws?wsdl", WSDL)]).await;
    let (elsewhere, mut elsewhere_seen) = recording_backend(&[("/x", BASE)]).await;
    let gw = TestServer::start(&gateway("", "/gw", &format!("http://{backend}/ws"), "")).await;
    for value in [
        format!("http%3A%2F%2F{elsewhere}%2Fx"),
        format!("http://{elsewhere}/x"),
        format!("%2F%2F{elsewhere}%2Fx"),
        format!("{elsewhere}/x"),
        "%2F%5C%5Cevil%2Fx".to_owned(),
        "%ZZ".to_owned(),
    ] {
        for key in ["xsd", "wsdl"] {
            let answer = get(gw.addr, &format!("/gw?{key}={value}")).await;
            answer.assert_fault(FaultKind::NoSuchService, SoapVersion::V11);
            assert!(
                answer.text().contains(&format!("?{key}=")),
                "{}",
                answer.text()
            );
        }
    }
    assert!(elsewhere_seen.try_recv().is_err(), "fetched from elsewhere");
    assert!(seen.try_recv().is_err(), "fetched from the backend");
}

#[tokio::test]
async fn a_prefix_service_forwards_the_rest_of_the_path_and_exact_paths_win() {
    let (backend, mut seen) = recording_backend(&[("/base/a/b?wsdl", WSDL)]).await;
    let (deeper, mut deeper_seen) = recording_backend(&[]).await;
    let config = format!(
        "{}\n[[service]]\nname = \"exact\"\npath = \"/api/exact\"\nbuiltin = \"echo\"\n\n\
         [[service]]\nname = \"deep\"\npath = \"/api/deep/*\"\nupstream = [\"http://{deeper}/deeper/\"]\n",
        gateway("", "/api/*", &format!("http://{backend}/base"), "")
    );
    let gw = TestServer::start(&config).await;
    let answer = post_with(gw.addr, "/api/a/b?x=1&y=2", &[]).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.text());
    assert_eq!(seen.try_recv().unwrap().target, "/base/a/b?x=1&y=2");
    post_with(gw.addr, "/api", &[]).await;
    assert_eq!(seen.try_recv().unwrap().target, "/base");
    // The exact path wins: the echo answers with the request's payload.
    let answer = post_with(gw.addr, "/api/exact", &[]).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.text());
    assert!(answer.text().contains("hello"), "{}", answer.text());
    // The longest prefix wins.
    let answer = post_with(gw.addr, "/api/deep/q", &[]).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.text());
    assert_eq!(deeper_seen.try_recv().unwrap().target, "/deeper/q");
    assert!(seen.try_recv().is_err());
    // Neither a dot segment nor a path that only starts like the prefix.
    for path in ["/api/../admin", "/api/%2e%2e/admin", "/apix"] {
        post_with(gw.addr, path, &[])
            .await
            .assert_fault(FaultKind::NoSuchService, SoapVersion::V12);
    }
    assert!(seen.try_recv().is_err());
    // The WSDL below the prefix is the backend's at the same place, addressed there.
    let wsdl = get(gw.addr, "/api/a/b?wsdl").await;
    assert_eq!(wsdl.status, StatusCode::OK, "{}", wsdl.text());
    assert!(
        wsdl.text().contains(&format!(
            r#"<soap:address location="http://{}/api/a/b"/>"#,
            gw.addr
        )),
        "{}",
        wsdl.text()
    );
}

#[tokio::test]
async fn the_wsdl_cache_holds_at_most_wsdl_cache_documents() {
    let docs = [("/app/ws?wsdl", WSDL), ("/app/types.xsd", TYPES)];
    for (keep, fetches) in [(1, 3), (2, 2)] {
        let (backend, mut seen) = recording_backend(&docs).await;
        let gw = TestServer::start(&gateway(
            "",
            "/gw",
            &format!("http://{backend}/app/ws"),
            &format!("wsdl_cache_documents = {keep}\n"),
        ))
        .await;
        for path in ["/gw?wsdl", "/gw?xsd=/app/types.xsd", "/gw?wsdl"] {
            assert_eq!(get(gw.addr, path).await.status, StatusCode::OK, "{path}");
        }
        let mut asked = 0;
        while seen.try_recv().is_ok() {
            asked += 1;
        }
        // With room for one document the schema pushes the WSDL out, which is fetched again.
        assert_eq!(asked, fetches, "wsdl_cache_documents = {keep}");
    }
}
