//! The mustUnderstand rule at the edge: blocks nobody understands fault; an intermediary
//! leaves the ultimate receiver's blocks to it.

use crate::support;

use http::StatusCode;
use lather_envelope::{FaultKind, SoapVersion};
use support::*;

fn mandatory(version: SoapVersion, role: Option<&str>) -> String {
    let yes = if version == SoapVersion::V11 {
        "1"
    } else {
        "true"
    };
    let role = match (role, version) {
        (Some(r), SoapVersion::V11) => format!(r#" s:actor="{r}""#),
        (Some(r), SoapVersion::V12) => format!(r#" s:role="{r}""#),
        (None, _) => String::new(),
    };
    format!(r#"<t:Tx xmlns:t="urn:tx" s:mustUnderstand="{yes}"{role}>1</t:Tx>"#)
}

#[tokio::test]
async fn an_unknown_mandatory_block_is_a_must_understand_fault() {
    let s = TestServer::echo().await;
    for version in [SoapVersion::V11, SoapVersion::V12] {
        let answer = post(
            s.addr,
            "/echo",
            version,
            envelope(version, &mandatory(version, None), ECHO_PAYLOAD),
        )
        .await;
        answer.assert_fault(FaultKind::MustUnderstand, version);
        assert!(answer.text().contains("{urn:tx}Tx"), "{}", answer.text());
    }
    let answer = post(
        s.addr,
        "/echo",
        SoapVersion::V12,
        envelope(
            SoapVersion::V12,
            &mandatory(SoapVersion::V12, None),
            ECHO_PAYLOAD,
        ),
    )
    .await;
    assert!(
        answer
            .text()
            .contains(r#"<env:Header xmlns:q0="urn:tx"><env:NotUnderstood qname="q0:Tx"/>"#),
        "{}",
        answer.text()
    );
    assert!(
        answer
            .text()
            .contains("<env:Value>env:MustUnderstand</env:Value>"),
        "{}",
        answer.text()
    );
}

#[tokio::test]
async fn blocks_the_service_understands_or_that_are_not_for_it_pass() {
    let s = TestServer::echo().await;
    let id = r#"<a:MessageID xmlns:a="http://www.w3.org/2005/08/addressing" s:mustUnderstand="true">urn:uuid:1</a:MessageID>"#;
    let answer = post(
        s.addr,
        "/echo",
        SoapVersion::V12,
        envelope(SoapVersion::V12, id, ECHO_PAYLOAD),
    )
    .await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.text());
    let none = mandatory(
        SoapVersion::V12,
        Some("http://www.w3.org/2003/05/soap-envelope/role/none"),
    );
    let answer = post(
        s.addr,
        "/echo",
        SoapVersion::V12,
        envelope(SoapVersion::V12, &none, ECHO_PAYLOAD),
    )
    .await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.text());
    let elsewhere = mandatory(SoapVersion::V11, Some("urn:another-node"));
    let answer = post(
        s.addr,
        "/echo",
        SoapVersion::V11,
        envelope(SoapVersion::V11, &elsewhere, ECHO_PAYLOAD),
    )
    .await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.text());
}

#[tokio::test]
async fn a_gateway_answers_for_next_and_forwards_the_rest() {
    let backend = TestServer::echo().await;
    let gw = TestServer::start(&format!(
        "[[service]]\nname = \"gw\"\npath = \"/gw\"\nupstream = [\"{}\"]\n",
        backend.url("/echo")
    ))
    .await;
    // Meant for the next node — the gateway — which does not understand it.
    let next = mandatory(SoapVersion::V11, Some(SoapVersion::V11.next_role()));
    let answer = post(
        gw.addr,
        "/gw",
        SoapVersion::V11,
        envelope(SoapVersion::V11, &next, ECHO_PAYLOAD),
    )
    .await;
    answer.assert_fault(FaultKind::MustUnderstand, SoapVersion::V11);
    // Meant for the ultimate receiver: forwarded, and the backend (an echo) refuses it.
    let ultimate = mandatory(SoapVersion::V12, None);
    let answer = post(
        gw.addr,
        "/gw",
        SoapVersion::V12,
        envelope(SoapVersion::V12, &ultimate, ECHO_PAYLOAD),
    )
    .await;
    answer.assert_fault(FaultKind::MustUnderstand, SoapVersion::V12);
    let text = get(backend.addr, "/metrics").await.text().to_owned();
    assert_eq!(
        metric(
            &text,
            r#"lather_faults_total{service="echo",fault="MustUnderstand"}"#
        ),
        Some(1.0),
        "{text}"
    );
}

/// The amplification attack: ~150 KB of empty mandatory blocks sharing one 1 KB namespace
/// declared once. The fault lists the first blocks, counts the rest, and stays small.
#[tokio::test]
async fn thousands_of_unknown_mandatory_blocks_get_a_small_fault() {
    let s = TestServer::echo().await;
    let ns = format!("urn:{}", "n".repeat(1020));
    for version in [SoapVersion::V11, SoapVersion::V12] {
        let mut blocks = String::new();
        let mut count = 0;
        while blocks.len() < 150_000 {
            blocks.push_str(&format!(r#"<h:b{count} s:mustUnderstand="1"/>"#));
            count += 1;
        }
        let body = envelope(version, &blocks, ECHO_PAYLOAD).replacen(
            "<s:Envelope ",
            &format!(r#"<s:Envelope xmlns:h="{ns}" "#),
            1,
        );
        let answer = tokio::time::timeout(
            std::time::Duration::from_secs(10),
            post(s.addr, "/echo", version, body),
        )
        .await
        .expect("answered within 10 s");
        answer.assert_fault(FaultKind::MustUnderstand, version);
        assert!(answer.body.len() < 16 * 1024, "{} bytes", answer.body.len());
        let text = answer.text();
        assert!(text.contains(" more"), "{text}");
        if version == SoapVersion::V12 {
            assert_eq!(text.matches("<env:NotUnderstood ").count(), 16, "{text}");
            assert_eq!(text.matches("xmlns:q0=").count(), 1, "{text}");
            assert!(
                text.contains(r#"<env:NotUnderstood qname="q0:b0"/>"#),
                "{text}"
            );
        }
    }
}
