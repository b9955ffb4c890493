//! The client against lather's own echo over loopback: both SOAP versions, WS-Addressing in
//! both namespaces, lather's faults as typed errors, the size bound, keep-alive reuse.

use crate::support;

use lather_client::{Call, Client, ClientError, Wsa};
use lather_envelope::{
    Element, Fault, FaultKind, Limits, QName, SOAP11_NS, SOAP12_NS, SoapVersion,
};
use support::*;

#[tokio::test]
async fn calls_the_echo_in_both_versions() {
    let lather = Lather::echo().await;
    let client = Client::new();
    for version in [SoapVersion::V11, SoapVersion::V12] {
        let call = Call::new(ECHO_PAYLOAD).version(version).action(ECHO_ACTION);
        let answer = client.call(&lather.url("/echo"), &call).await.unwrap();
        assert_eq!(answer.version(), version);
        assert_eq!(
            answer.operation(),
            Some(&QName::new("urn:lather:echo", "echo"))
        );
        assert_eq!(&answer.body()[..], ECHO_PAYLOAD.as_bytes());
        assert!(
            answer.headers().is_empty(),
            "no addressing asked, none answered"
        );
    }
}

#[tokio::test]
async fn the_default_version_applies_to_calls_that_set_none() {
    let lather = Lather::echo().await;
    let client = Client::builder()
        .default_version(SoapVersion::V11)
        .build()
        .unwrap();
    let answer = client
        .call(&lather.url("/echo"), &Call::new(ECHO_PAYLOAD))
        .await
        .unwrap();
    assert_eq!(answer.version(), SoapVersion::V11);
}

#[tokio::test]
async fn addressing_sends_a_message_id_the_echo_relates_to_in_both_namespaces() {
    let lather = Lather::echo().await;
    let client = Client::new();
    for (wsa, version) in [
        (Wsa::V10, SoapVersion::V12),
        (Wsa::Submission04, SoapVersion::V11),
        (Wsa::V10, SoapVersion::V11),
    ] {
        let call = Call::new(ECHO_PAYLOAD)
            .version(version)
            .action(ECHO_ACTION)
            .addressing(wsa);
        let id = call.message_id().expect("addressing on").to_owned();
        assert!(id.starts_with("urn:uuid:"), "{id}");
        let answer = client.call(&lather.url("/echo"), &call).await.unwrap();
        assert_eq!(wsa.relates_to(&answer), Some(id), "{wsa:?} {version:?}");
        let other = if wsa == Wsa::V10 {
            Wsa::Submission04
        } else {
            Wsa::V10
        };
        assert_eq!(other.relates_to(&answer), None);
    }
    // Each call gets a fresh MessageID.
    let a = Call::new(ECHO_PAYLOAD)
        .action(ECHO_ACTION)
        .addressing(Wsa::V10);
    let b = Call::new(ECHO_PAYLOAD)
        .action(ECHO_ACTION)
        .addressing(Wsa::V10);
    assert_ne!(a.message_id(), b.message_id());
}

#[tokio::test]
async fn addressing_without_an_action_is_refused_before_sending() {
    let peer = RawPeer::silent().await;
    let err = Client::new()
        .call(
            &peer.url("/x"),
            &Call::new(ECHO_PAYLOAD).addressing(Wsa::V10),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, ClientError::InvalidRequest { .. }), "{err:?}");
    assert_eq!(peer.connections(), 0);
}

#[tokio::test]
async fn an_unknown_path_is_a_no_such_service_fault_with_its_code_and_subcode() {
    let lather = Lather::echo().await;
    let client = Client::new();
    for version in [SoapVersion::V11, SoapVersion::V12] {
        let call = Call::new(ECHO_PAYLOAD).version(version).action(ECHO_ACTION);
        let err = client.call(&lather.url("/nope"), &call).await.unwrap_err();
        assert!(err.is_fault(), "{err:?}");
        assert!(!err.is_timeout() && !err.is_connect());
        assert_eq!(
            err.status(),
            Some(Fault::new(FaultKind::NoSuchService).http_status(version))
        );
        let fault = err.fault().unwrap();
        assert_eq!(fault.version(), version);
        assert_eq!(fault.lather_fault_name().as_deref(), Some("NoSuchService"));
        let (sub_ns, _, sub_local) = FaultKind::NoSuchService.subcode();
        match version {
            SoapVersion::V12 => {
                assert_eq!(fault.code(), &QName::new(SOAP12_NS, "Sender"));
                assert_eq!(fault.subcodes(), &[QName::new(sub_ns, sub_local)]);
            }
            SoapVersion::V11 => {
                assert_eq!(fault.code(), &QName::new(SOAP11_NS, "Client"));
                assert!(fault.subcodes().is_empty());
            }
        }
        assert!(!fault.reason().is_empty());
        let detail = fault.detail_entries();
        assert_eq!(detail.len(), 1);
        let entry = Element::parse(&detail[0], &Limits::default()).unwrap();
        assert!(entry.name().is(lather_envelope::LATHER_FAULT_NS, "fault"));
        assert!(err.to_string().contains("fault"), "{err}");
    }
}

#[tokio::test]
async fn a_mandatory_header_nobody_understands_is_a_must_understand_fault() {
    let lather = Lather::echo().await;
    let block = format!(
        r#"<x:Need xmlns:x="urn:x" xmlns:e="{SOAP12_NS}" e:mustUnderstand="true">1</x:Need>"#
    );
    let call = Call::new(ECHO_PAYLOAD)
        .version(SoapVersion::V12)
        .action(ECHO_ACTION)
        .header(block);
    let err = Client::new()
        .call(&lather.url("/echo"), &call)
        .await
        .unwrap_err();
    let ClientError::Fault { status, fault } = &err else {
        panic!("{err:?}")
    };
    assert_eq!(*status, 500);
    assert_eq!(fault.code(), &QName::new(SOAP12_NS, "MustUnderstand"));
    assert_eq!(fault.lather_fault_name().as_deref(), Some("MustUnderstand"));
}

#[tokio::test]
async fn an_echo_answer_over_the_size_bound_is_too_large() {
    let lather = Lather::echo().await;
    let big = format!(
        r#"<e:echo xmlns:e="urn:lather:echo"><text>{}</text></e:echo>"#,
        "x".repeat(64 * 1024)
    );
    let client = Client::builder()
        .max_response_bytes(16 * 1024)
        .build()
        .unwrap();
    let err = client
        .call(
            &lather.url("/echo"),
            &Call::new(big.clone()).action(ECHO_ACTION),
        )
        .await
        .unwrap_err();
    assert!(err.is_too_large(), "{err:?}");
    assert!(
        matches!(err, ClientError::TooLarge { limit: 16384 }),
        "{err:?}"
    );
    // The default bound (4 MiB) lets it through.
    let answer = Client::new()
        .call(
            &lather.url("/echo"),
            &Call::new(big.clone()).action(ECHO_ACTION),
        )
        .await
        .unwrap();
    assert_eq!(&answer.body()[..], big.as_bytes());
}

#[tokio::test]
async fn a_raw_envelope_goes_out_with_send() {
    let lather = Lather::echo().await;
    let bytes = lather_envelope::EnvelopeBuilder::new(SoapVersion::V11)
        .body(ECHO_PAYLOAD.into())
        .build();
    let envelope = lather_envelope::Envelope::parse(bytes, &Limits::default()).unwrap();
    let response = Client::new()
        .send(&lather.url("/echo"), &envelope, Some(ECHO_ACTION))
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let answer = response.into_envelope().expect("an answer");
    assert_eq!(&answer.body()[..], ECHO_PAYLOAD.as_bytes());
}
