//! XML Encryption over HTTP: an echo service whose request flow decrypts and whose response
//! flow encrypts. The request is a vector made by Python's `cryptography` package (see
//! `crates/lather-handlers/tests/vectors/xmlenc_vectors.py`).

use crate::support;

mod vectors {
    #![allow(dead_code)]
    include!("../../lather-handlers/tests/vectors/xmlenc.rs");
}

use http::StatusCode;
use lather_envelope::{Envelope, FaultKind, Limits, QName, SoapVersion, WSSE_NS};
use lather_handlers::{Decrypt, EncryptionAlgorithm, EncryptionKey, XENC_NS};
use lather_pipeline::{Context, Message, Options, Outcome, Plan, Step, run};
use lather_test_util::ScratchDir;
use std::sync::Arc;
use support::*;

/// The response key: 16 bytes of 0x77, written to its file as hex.
const RESPONSE_KEY: [u8; 16] = [0x77; 16];

/// An echo service that decrypts requests with KEY256 (aes256-cbc vectors) and encrypts
/// responses with another key under aes128-gcm, so an answer that decrypts under the
/// response key cannot be the request's ciphertext sent back.
async fn server() -> TestServer {
    let dir = ScratchDir::new("xmlenc");
    let request_key = dir.write("request.key", vectors::KEY256);
    let response_key = dir.write("response.key", format!("{}\n", "77".repeat(16)));
    TestServer::start(&format!(
        "[handlers.open]\nkind = \"decrypt\"\nkey_file = \"{}\"\nrequired = true\n\
         [handlers.seal]\nkind = \"encrypt\"\nkey_file = \"{}\"\nalgorithm = \"aes128-gcm\"\n\
         [[service]]\nname = \"echo\"\npath = \"/echo\"\nbuiltin = \"echo\"\n\
         request = [[\"open\"]]\nresponse = [[\"seal\"]]\n",
        request_key.display(),
        response_key.display()
    ))
    .await
    .holding(dir)
}

/// The Body content of `envelope` decrypted with `key`, as a client would do it.
async fn client_decrypts(envelope: Envelope, key: &[u8]) -> String {
    let step = Step::new(
        "open",
        Arc::new(Decrypt::new(EncryptionKey::new(key).unwrap(), true)),
        Options::default(),
    );
    let plan = Plan::new(vec![vec![Arc::new(step)]]).unwrap();
    match run(
        &plan,
        Message::new(envelope, Context::default()),
        &Limits::default(),
    )
    .await
    {
        Outcome::Continue(m) => String::from_utf8(m.envelope().body().to_vec()).unwrap(),
        other => panic!("the client could not decrypt the answer: {other:?}"),
    }
}

#[tokio::test]
async fn the_service_sees_the_plaintext_and_the_client_gets_it_back_encrypted() {
    let s = server().await;
    let answer = post(
        s.addr,
        "/echo",
        SoapVersion::V12,
        vectors::ENCRYPTED_ENVELOPE,
    )
    .await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.text());
    let envelope = answer.envelope();
    assert_eq!(
        envelope.operation(),
        Some(&QName::new(XENC_NS, "EncryptedData")),
        "{}",
        answer.text()
    );
    assert!(
        answer.text().contains(&format!(
            r#"Algorithm="{}""#,
            EncryptionAlgorithm::Aes128Gcm.uri()
        )),
        "{}",
        answer.text()
    );
    assert!(!answer.text().contains("getQuote"), "{}", answer.text());
    // The echo answered the decrypted content (its declarations travel with it), which
    // the response flow encrypted under the response key.
    let content = client_decrypts(envelope, &RESPONSE_KEY).await;
    let expected = vectors::CONTENT.replacen(
        "<q:getQuote ",
        r#"<q:getQuote xmlns:env="http://www.w3.org/2003/05/soap-envelope" "#,
        1,
    );
    assert_eq!(content, expected);
}

#[tokio::test]
async fn plain_and_tampered_requests_get_the_ws_security_faults() {
    let s = server().await;
    let plain = post(
        s.addr,
        "/echo",
        SoapVersion::V12,
        envelope(SoapVersion::V12, "", ECHO_PAYLOAD),
    )
    .await;
    plain.assert_fault(FaultKind::InvalidSecurity, SoapVersion::V12);
    // One bit of the IV flipped ('A' → 'B' in the fourth base64 character): the ':' of the
    // plaintext's first start tag turns into 'z', which no longer matches its end tag.
    let tampered = vectors::ENCRYPTED_ENVELOPE.replacen("TFA8", "TFB8", 1);
    assert_ne!(tampered, vectors::ENCRYPTED_ENVELOPE);
    let answer = post(s.addr, "/echo", SoapVersion::V12, tampered).await;
    answer.assert_fault(FaultKind::FailedCheck, SoapVersion::V12);
    assert!(
        answer.text().contains(&format!(
            r#"<env:Value xmlns:wsse="{WSSE_NS}">wsse:FailedCheck</env:Value>"#
        )),
        "{}",
        answer.text()
    );
}
