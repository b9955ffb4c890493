//! Gateway mode against real backends on loopback: forwarding, round-robin, backends
//! that refuse or hang, passthrough of status and faults, WSDL rewriting.

use crate::support;

use http::StatusCode;
use lather_envelope::{FaultKind, QName, SoapVersion};
use support::*;

fn gateway_toml(upstreams: &[String], timeout_ms: u64) -> String {
    let list: Vec<String> = upstreams.iter().map(|u| format!("\"{u}\"")).collect();
    format!(
        "[[service]]\nname = \"gw\"\npath = \"/gw\"\nupstream = [{}]\ntimeout_ms = {timeout_ms}\n",
        list.join(", ")
    )
}

#[tokio::test]
async fn forwards_both_versions_to_an_echo_backend() {
    let backend = TestServer::echo().await;
    let gw = TestServer::start(&gateway_toml(&[backend.url("/echo")], 5000)).await;
    for version in [SoapVersion::V11, SoapVersion::V12] {
        let answer = post(gw.addr, "/gw", version, envelope(version, "", ECHO_PAYLOAD)).await;
        assert_eq!(answer.status, StatusCode::OK, "{}", answer.text());
        let env = answer.envelope();
        assert_eq!(env.version(), version);
        assert_eq!(
            env.operation(),
            Some(&QName::new("urn:lather:echo", "echo"))
        );
    }
}

#[tokio::test]
async fn round_robins_over_backends() {
    let a = TestServer::echo().await;
    let b = TestServer::echo().await;
    let gw = TestServer::start(&gateway_toml(&[a.url("/echo"), b.url("/echo")], 5000)).await;
    for _ in 0..10 {
        let answer = post(
            gw.addr,
            "/gw",
            SoapVersion::V11,
            envelope(SoapVersion::V11, "", ECHO_PAYLOAD),
        )
        .await;
        assert_eq!(answer.status, StatusCode::OK);
    }
    let count = |s: &TestServer| {
        let s = s.addr;
        async move {
            let text = get(s, "/metrics").await.text().to_owned();
            metric(&text, r#"lather_requests_total{service="echo",code="200"}"#)
        }
    };
    assert_eq!(count(&a).await, Some(5.0));
    assert_eq!(count(&b).await, Some(5.0));
}

#[tokio::test]
async fn skips_a_backend_that_refuses_connections() {
    let down = closed_port().await;
    let up = TestServer::echo().await;
    let gw = TestServer::start(&gateway_toml(
        &[format!("http://{down}/echo"), up.url("/echo")],
        5000,
    ))
    .await;
    for _ in 0..6 {
        let answer = post(
            gw.addr,
            "/gw",
            SoapVersion::V12,
            envelope(SoapVersion::V12, "", ECHO_PAYLOAD),
        )
        .await;
        assert_eq!(answer.status, StatusCode::OK, "{}", answer.text());
    }
}

#[tokio::test]
async fn all_backends_down_is_a_503_counting_them_without_their_addresses() {
    let d1 = closed_port().await;
    let d2 = closed_port().await;
    let gw = TestServer::start(&gateway_toml(
        &[format!("http://{d1}/a"), format!("http://{d2}/b")],
        5000,
    ))
    .await;
    for version in [SoapVersion::V11, SoapVersion::V12] {
        let answer = post(gw.addr, "/gw", version, envelope(version, "", ECHO_PAYLOAD)).await;
        answer.assert_fault(FaultKind::UpstreamUnavailable, version);
        assert_eq!(answer.status, StatusCode::SERVICE_UNAVAILABLE);
        assert!(answer.headers.contains_key("retry-after"));
        assert!(
            answer.text().contains("backend 1 of 2") && answer.text().contains("backend 2 of 2"),
            "{}",
            answer.text()
        );
        assert!(
            !answer.text().contains(&d1.to_string()) && !answer.text().contains(&d2.to_string()),
            "{}",
            answer.text()
        );
        assert!(
            answer.text().to_lowercase().contains("refused"),
            "{}",
            answer.text()
        );
    }
}

#[tokio::test]
async fn a_backend_slower_than_the_timeout_is_a_504() {
    // The backend answers after 10 s; the gateway gives up after 200 ms, well before.
    let slow = fixed_backend(200, "text/xml", "<late/>", 10_000).await;
    let gw = TestServer::start(&gateway_toml(&[format!("http://{slow}/")], 200)).await;
    let started = std::time::Instant::now();
    let answer = post(
        gw.addr,
        "/gw",
        SoapVersion::V12,
        envelope(SoapVersion::V12, "", ECHO_PAYLOAD),
    )
    .await;
    answer.assert_fault(FaultKind::UpstreamTimeout, SoapVersion::V12);
    assert!(answer.text().contains("200 ms"), "{}", answer.text());
    assert!(started.elapsed() < std::time::Duration::from_secs(8));
}

#[tokio::test]
async fn backend_status_and_faults_pass_through() {
    const FAULT: &str = r#"<s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope"><s:Body><s:Fault><s:Code><s:Value>s:Sender</s:Value></s:Code><s:Reason><s:Text xml:lang="en">backend says no</s:Text></s:Reason></s:Fault></s:Body></s:Envelope>"#;
    let backend = fixed_backend(400, "application/soap+xml; charset=utf-8", FAULT, 0).await;
    let gw = TestServer::start(&gateway_toml(&[format!("http://{backend}/ws")], 5000)).await;
    let answer = post(
        gw.addr,
        "/gw",
        SoapVersion::V12,
        envelope(SoapVersion::V12, "", ECHO_PAYLOAD),
    )
    .await;
    assert_eq!(answer.status, StatusCode::BAD_REQUEST);
    assert_eq!(answer.text(), FAULT);
    assert!(
        answer.headers["content-type"]
            .to_str()
            .unwrap()
            .starts_with("application/soap+xml")
    );
}

#[tokio::test]
async fn bad_requests_are_refused_before_reaching_the_backend() {
    let backend = TestServer::echo().await;
    let gw = TestServer::start(&gateway_toml(&[backend.url("/echo")], 5000)).await;
    let answer = post(gw.addr, "/gw", SoapVersion::V11, "<!DOCTYPE x><x/>").await;
    answer.assert_fault(FaultKind::DoctypeForbidden, SoapVersion::V11);
    let text = get(backend.addr, "/metrics").await.text().to_owned();
    let forwarded = metric(&text, r#"lather_requests_total{service="echo",code="200"}"#);
    assert_eq!(forwarded, Some(0.0), "{text}");
    let bytes = metric(&text, r#"lather_request_bytes_total{service="echo"}"#);
    assert_eq!(bytes, Some(0.0), "{text}");
}

#[tokio::test]
async fn wsdl_locations_point_at_the_gateway() {
    let backend = TestServer::echo().await;
    let gw = TestServer::start(&gateway_toml(&[backend.url("/echo")], 5000)).await;
    let answer = get(gw.addr, "/gw?wsdl").await;
    assert_eq!(answer.status, StatusCode::OK);
    let gateway_location = format!(r#"location="http://{}/gw""#, gw.addr);
    assert_eq!(
        answer.text().matches(&gateway_location).count(),
        2,
        "{}",
        answer.text()
    );
    assert!(
        !answer.text().contains(&backend.addr.to_string()),
        "{}",
        answer.text()
    );
}

#[tokio::test]
async fn wsdl_with_the_backend_down_is_a_fault() {
    let down = closed_port().await;
    let gw = TestServer::start(&gateway_toml(&[format!("http://{down}/echo")], 5000)).await;
    get(gw.addr, "/gw?wsdl")
        .await
        .assert_fault(FaultKind::UpstreamUnavailable, SoapVersion::V11);
}
