//! The client against raw peers: what goes on the wire per SOAP version, keep-alive reuse,
//! one-way answers, and each transport failure as its own typed error.

use crate::support;

use lather_client::{Call, Client, ClientError};
use lather_envelope::SoapVersion;
use std::time::Duration;
use support::*;

const ANSWER12: &str = r#"<e:Envelope xmlns:e="http://www.w3.org/2003/05/soap-envelope"><e:Body><m:ok xmlns:m="urn:m"/></e:Body></e:Envelope>"#;
const ANSWER11: &str = r#"<s:Envelope xmlns:s="http://schemas.xmlsoap.org/soap/envelope/"><s:Body><m:ok xmlns:m="urn:m"/></s:Body></s:Envelope>"#;

fn head_value(head: &str, name: &str) -> Option<String> {
    head.lines().find_map(|l| {
        let (n, v) = l.split_once(':')?;
        n.eq_ignore_ascii_case(name).then(|| v.trim().to_owned())
    })
}

#[tokio::test]
async fn content_type_and_action_follow_the_version_and_connections_are_reused() {
    let peer = RawPeer::answering(http_answer(
        "200 OK",
        "application/soap+xml; charset=utf-8",
        ANSWER12.as_bytes(),
    ))
    .await;
    let client = Client::builder().user_agent("tests/1").build().unwrap();
    let call = Call::new("<m:x xmlns:m=\"urn:m\"/>")
        .version(SoapVersion::V12)
        .action("urn:x");
    for _ in 0..3 {
        client.call(&peer.url("/svc"), &call).await.unwrap();
    }
    // A clone shares the pool.
    client.clone().call(&peer.url("/svc"), &call).await.unwrap();
    assert_eq!(
        peer.connections(),
        1,
        "one keep-alive connection for four calls"
    );
    let heads = peer.request_heads();
    assert_eq!(heads.len(), 4);
    assert!(
        heads[0].starts_with("POST /svc HTTP/1.1\r\n"),
        "{}",
        heads[0]
    );
    assert_eq!(
        head_value(&heads[0], "content-type").as_deref(),
        Some("application/soap+xml; charset=utf-8; action=\"urn:x\"")
    );
    assert_eq!(head_value(&heads[0], "soapaction"), None);
    assert_eq!(
        head_value(&heads[0], "user-agent").as_deref(),
        Some("tests/1")
    );

    let peer11 = RawPeer::answering(http_answer("200 OK", "text/xml", ANSWER11.as_bytes())).await;
    client
        .call(&peer11.url("/svc"), &call.clone().version(SoapVersion::V11))
        .await
        .unwrap();
    client
        .call(
            &peer11.url("/svc"),
            &Call::new("<m:x xmlns:m=\"urn:m\"/>").version(SoapVersion::V11),
        )
        .await
        .unwrap();
    let heads = peer11.request_heads();
    assert_eq!(
        head_value(&heads[0], "content-type").as_deref(),
        Some("text/xml; charset=utf-8")
    );
    assert_eq!(
        head_value(&heads[0], "soapaction").as_deref(),
        Some("\"urn:x\"")
    );
    assert_eq!(head_value(&heads[1], "soapaction").as_deref(), Some("\"\""));
}

#[tokio::test]
async fn without_idle_connections_kept_each_call_dials_anew() {
    let peer = RawPeer::answering(http_answer(
        "200 OK",
        "application/soap+xml",
        ANSWER12.as_bytes(),
    ))
    .await;
    let client = Client::builder().pool_max_idle_per_host(0).build().unwrap();
    let call = Call::new("<m:x xmlns:m=\"urn:m\"/>");
    for _ in 0..3 {
        client.call(&peer.url("/svc"), &call).await.unwrap();
    }
    assert_eq!(peer.connections(), 3);
}

#[tokio::test]
async fn a_one_way_operation_answered_202_is_ok_but_a_call_expecting_an_answer_is_not() {
    let peer =
        RawPeer::answering(b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n".to_vec()).await;
    let client = Client::new();
    let call = Call::new("<m:note xmlns:m=\"urn:m\"/>").action("urn:note");
    client.call_oneway(&peer.url("/in"), &call).await.unwrap();
    let err = client.call(&peer.url("/in"), &call).await.unwrap_err();
    assert!(
        matches!(err, ClientError::EmptyAnswer { status: 202 }),
        "{err:?}"
    );
    let raw = client
        .send_bytes(&peer.url("/in"), SoapVersion::V12, None, ANSWER12.into())
        .await
        .unwrap();
    assert_eq!(raw.status(), 202);
    assert!(raw.envelope().is_none());
}

#[tokio::test]
async fn a_peer_that_never_answers_is_a_timeout() {
    let peer = RawPeer::silent().await;
    let client = Client::builder()
        .request_timeout(Duration::from_millis(300))
        .build()
        .unwrap();
    let err = client
        .call(&peer.url("/slow"), &Call::new("<m:x xmlns:m=\"urn:m\"/>"))
        .await
        .unwrap_err();
    assert!(err.is_timeout(), "{err:?}");
    assert!(!err.is_connect());
    assert!(
        matches!(&err, ClientError::Timeout { after, url } if *after == Duration::from_millis(300) && url.ends_with("/slow")),
        "{err:?}"
    );
}

#[tokio::test]
async fn a_closed_port_is_a_connect_error() {
    let dead = closed_port().await;
    let url = format!("http://{dead}/svc");
    let err = Client::new()
        .call(&url, &Call::new("<m:x xmlns:m=\"urn:m\"/>"))
        .await
        .unwrap_err();
    assert!(err.is_connect(), "{err:?}");
    assert!(!err.is_timeout() && !err.is_fault());
    assert!(err.to_string().contains(&url), "{err}");
}

#[tokio::test]
async fn answers_over_the_bound_are_too_large_with_or_without_a_length() {
    let envelope = format!(
        r#"<e:Envelope xmlns:e="http://www.w3.org/2003/05/soap-envelope"><e:Body><m:ok xmlns:m="urn:m">{}</m:ok></e:Body></e:Envelope>"#,
        "x".repeat(300 * 1024)
    );
    let client = Client::builder()
        .max_response_bytes(256 * 1024)
        .build()
        .unwrap();
    for answer in [
        http_answer("200 OK", "application/soap+xml", envelope.as_bytes()),
        chunked_answer("application/soap+xml", envelope.as_bytes()),
    ] {
        let peer = RawPeer::answering(answer).await;
        let err = client
            .call(&peer.url("/big"), &Call::new("<m:x xmlns:m=\"urn:m\"/>"))
            .await
            .unwrap_err();
        assert!(
            matches!(err, ClientError::TooLarge { limit } if limit == 256 * 1024),
            "{err:?}"
        );
    }
    // Under a larger bound the same chunked answer is read whole.
    let peer =
        RawPeer::answering(chunked_answer("application/soap+xml", envelope.as_bytes())).await;
    let answer = Client::new()
        .call(&peer.url("/big"), &Call::new("<m:x xmlns:m=\"urn:m\"/>"))
        .await
        .unwrap();
    assert_eq!(answer.as_bytes().len(), envelope.len());
}

#[tokio::test]
async fn an_http_error_without_an_envelope_is_a_status_error() {
    let peer = RawPeer::answering(http_answer(
        "503 Service Unavailable",
        "text/plain",
        b"down for maintenance",
    ))
    .await;
    let err = Client::new()
        .call(&peer.url("/svc"), &Call::new("<m:x xmlns:m=\"urn:m\"/>"))
        .await
        .unwrap_err();
    let ClientError::Status {
        status,
        content_type,
        body,
    } = &err
    else {
        panic!("{err:?}")
    };
    assert_eq!(*status, 503);
    assert_eq!(content_type.as_deref(), Some("text/plain"));
    assert_eq!(&body[..], b"down for maintenance");
}

#[tokio::test]
async fn garbage_and_the_wrong_version_are_their_own_errors() {
    let peer = RawPeer::answering(http_answer(
        "200 OK",
        "text/html",
        b"<html><body>hi</body></html>",
    ))
    .await;
    let err = Client::new()
        .call(&peer.url("/svc"), &Call::new("<m:x xmlns:m=\"urn:m\"/>"))
        .await
        .unwrap_err();
    assert!(
        matches!(err, ClientError::Malformed { status: 200, .. }),
        "{err:?}"
    );

    let peer = RawPeer::answering(http_answer("200 OK", "text/xml", ANSWER11.as_bytes())).await;
    let err = Client::new()
        .call(
            &peer.url("/svc"),
            &Call::new("<m:x xmlns:m=\"urn:m\"/>").version(SoapVersion::V12),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            ClientError::VersionMismatch {
                sent: SoapVersion::V12,
                received: SoapVersion::V11,
                ..
            }
        ),
        "{err:?}"
    );
}

#[tokio::test]
async fn urls_the_client_cannot_reach_are_refused_up_front() {
    for url in ["ftp://example.org/svc", "/relative", "mailto:x@y"] {
        let err = Client::new()
            .call(url, &Call::new("<m:x xmlns:m=\"urn:m\"/>"))
            .await
            .unwrap_err();
        assert!(
            matches!(err, ClientError::InvalidUrl { .. }),
            "{url}: {err:?}"
        );
    }
    let err = Client::builder()
        .user_agent("bad\nagent")
        .build()
        .unwrap_err();
    assert!(matches!(err, ClientError::InvalidRequest { .. }), "{err:?}");
}
