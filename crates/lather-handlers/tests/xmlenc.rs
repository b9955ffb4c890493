//! `encrypt` and `decrypt` on real messages. The vectors in `vectors/xmlenc.rs` were made
//! with Python's `cryptography` package by `vectors/xmlenc_vectors.py` (run it to remake
//! them: `python3 crates/lather-handlers/tests/vectors/xmlenc_vectors.py`).

mod vectors {
    include!("vectors/xmlenc.rs");
}

use lather_envelope::{Envelope, EnvelopeBuilder, Fault, FaultKind, Limits, QName, SoapVersion};
use lather_handlers::{Decrypt, Encrypt, EncryptionAlgorithm, EncryptionKey, XENC_NS};
use lather_pipeline::{Context, Handler, Message, Options, Outcome, Plan, Step, run};
use std::sync::Arc;
use vectors::*;

const TRIPLEDES: &str = "http://www.w3.org/2001/04/xmlenc#tripledes-cbc";
/// The one reason every key-dependent failure gets.
const UNDECRYPTABLE: &str = "the xenc:EncryptedData could not be decrypted";

fn key(bytes: &[u8]) -> EncryptionKey {
    EncryptionKey::new(bytes).unwrap()
}

fn decrypt(bytes: &[u8]) -> Arc<dyn Handler> {
    Arc::new(Decrypt::new(key(bytes), false))
}

fn encrypt(algorithm: EncryptionAlgorithm, bytes: &[u8]) -> Arc<dyn Handler> {
    Arc::new(Encrypt::new(key(bytes), algorithm).unwrap())
}

fn encrypted_data(uri: &str, cipher_value: &str) -> String {
    format!(
        r#"<xenc:EncryptedData xmlns:xenc="{XENC_NS}" Type="{XENC_NS}Content"><xenc:EncryptionMethod Algorithm="{uri}"/><xenc:CipherData><xenc:CipherValue>{cipher_value}</xenc:CipherValue></xenc:CipherData></xenc:EncryptedData>"#
    )
}

fn envelope_with(body: &str) -> Envelope {
    let bytes = EnvelopeBuilder::new(SoapVersion::V12)
        .body(body.to_owned().into())
        .build();
    Envelope::parse(bytes, &Limits::default()).unwrap()
}

async fn through(handlers: Vec<Arc<dyn Handler>>, envelope: Envelope) -> Outcome {
    let stages = handlers
        .into_iter()
        .enumerate()
        .map(|(i, h)| vec![Arc::new(Step::new(format!("h{i}"), h, Options::default()))])
        .collect();
    let message = Message::new(envelope, Context::default());
    run(&Plan::new(stages).unwrap(), message, &Limits::default()).await
}

fn body_of(outcome: Outcome) -> String {
    match outcome {
        Outcome::Continue(m) => String::from_utf8(m.envelope().body().to_vec()).unwrap(),
        other => panic!("{other:?}"),
    }
}

fn fault_of(outcome: Outcome) -> Fault {
    match outcome {
        Outcome::Fault(f) => f,
        other => panic!("expected a fault, got {other:?}"),
    }
}

async fn decrypt_fault(key_bytes: &[u8], uri: &str, cipher_value: &str) -> Fault {
    fault_of(
        through(
            vec![decrypt(key_bytes)],
            envelope_with(&encrypted_data(uri, cipher_value)),
        )
        .await,
    )
}

fn b64(data: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(data)
}

fn unb64(text: &str) -> Vec<u8> {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .unwrap()
}

// ===== the independent vectors =====

#[tokio::test]
async fn decrypts_the_python_vectors_of_every_algorithm() {
    assert_eq!(VECTORS.len(), 4);
    for (uri, key_bytes, cipher_value) in VECTORS {
        let out = through(
            vec![decrypt(key_bytes)],
            envelope_with(&encrypted_data(uri, cipher_value)),
        )
        .await;
        assert_eq!(body_of(out), CONTENT, "{uri}");
    }
}

#[tokio::test]
async fn decrypts_a_whole_envelope_a_python_client_sent() {
    let envelope = Envelope::parse(ENCRYPTED_ENVELOPE.into(), &Limits::default()).unwrap();
    let Outcome::Continue(message) = through(vec![decrypt(KEY256)], envelope).await else {
        panic!("not decrypted");
    };
    let envelope = message.envelope();
    assert_eq!(
        String::from_utf8(envelope.body().to_vec()).unwrap(),
        CONTENT
    );
    assert_eq!(
        envelope.operation(),
        Some(&QName::new("urn:quotes", "getQuote"))
    );
}

#[tokio::test]
async fn iso10126_padding_that_pkcs7_would_refuse_is_accepted() {
    let uri = EncryptionAlgorithm::Aes128Cbc.uri();
    let out = through(
        vec![decrypt(KEY128)],
        envelope_with(&encrypted_data(uri, WHOLE_BLOCK_CBC)),
    )
    .await;
    assert_eq!(body_of(out), WHOLE_BLOCK_PLAINTEXT);
}

// ===== encrypt =====

/// Body content that leans on the Envelope's and Body's declarations (`m`, the default
/// namespace) and has two top-level elements.
const LEANING: &str = r#"<m:Order id="7"><item>tea &amp; cake</item></m:Order> <Note>été</Note>"#;

fn leaning_envelope() -> Envelope {
    let bytes = format!(
        r#"<s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope" xmlns:m="urn:orders"><s:Body xmlns="urn:notes">{LEANING}</s:Body></s:Envelope>"#
    );
    Envelope::parse(bytes.into(), &Limits::default()).unwrap()
}

#[tokio::test]
async fn encrypt_then_decrypt_gives_content_that_stands_in_any_envelope() {
    for algorithm in EncryptionAlgorithm::ALL {
        let key_bytes = &[0x42; 32][..algorithm.key_len()];
        let sealed =
            body_of(through(vec![encrypt(algorithm, key_bytes)], leaning_envelope()).await);
        assert!(
            sealed.starts_with("<xenc:EncryptedData")
                && sealed.contains(&format!(r#"Algorithm="{}""#, algorithm.uri()))
                && sealed.contains(r#"Type="http://www.w3.org/2001/04/xmlenc#Content""#),
            "{sealed}"
        );
        assert!(!sealed.contains("Order"), "{sealed}");
        // Decrypted in a new envelope that declares nothing but SOAP's namespace.
        let opened = body_of(through(vec![decrypt(key_bytes)], envelope_with(&sealed)).await);
        assert_eq!(
            opened,
            r#"<m:Order xmlns:s="http://www.w3.org/2003/05/soap-envelope" xmlns:m="urn:orders" xmlns="urn:notes" id="7"><item>tea &amp; cake</item></m:Order> <Note xmlns:s="http://www.w3.org/2003/05/soap-envelope" xmlns:m="urn:orders" xmlns="urn:notes">été</Note>"#,
            "{algorithm:?}"
        );
        let again = envelope_with(&opened);
        assert_eq!(again.operation(), Some(&QName::new("urn:orders", "Order")));
        assert_eq!(again.body_child_count(), 2);
    }
}

#[tokio::test]
async fn encrypting_twice_gives_two_ciphertexts() {
    let algorithm = EncryptionAlgorithm::Aes256Gcm;
    let one = body_of(through(vec![encrypt(algorithm, KEY256)], leaning_envelope()).await);
    let two = body_of(through(vec![encrypt(algorithm, KEY256)], leaning_envelope()).await);
    assert_ne!(one, two, "the IV must be fresh for every message");
}

#[tokio::test]
async fn encrypt_and_decrypt_in_one_flow_restore_the_body() {
    let out = through(
        vec![
            encrypt(EncryptionAlgorithm::Aes128Cbc, KEY128),
            decrypt(KEY128),
        ],
        envelope_with(CONTENT),
    )
    .await;
    // The plaintext carries what was in scope at the Body, the envelope's prefix too.
    let carried = CONTENT.replacen(
        "<q:getQuote ",
        r#"<q:getQuote xmlns:env="http://www.w3.org/2003/05/soap-envelope" "#,
        1,
    );
    assert_eq!(body_of(out), carried);
}

#[tokio::test]
async fn faults_empty_and_encrypted_bodies_are_not_encrypted() {
    let gcm = || encrypt(EncryptionAlgorithm::Aes128Gcm, KEY128);
    let fault_body = r#"<env:Fault xmlns:env="http://www.w3.org/2003/05/soap-envelope"><env:Code><env:Value>env:Receiver</env:Value></env:Code><env:Reason><env:Text xml:lang="en">x</env:Text></env:Reason></env:Fault>"#;
    let already = encrypted_data(VECTORS[0].0, VECTORS[0].2);
    for body in [fault_body, "", already.as_str()] {
        assert_eq!(
            body_of(through(vec![gcm()], envelope_with(body)).await),
            body
        );
    }
}

// ===== what decrypt refuses =====

#[tokio::test]
async fn a_wrong_key_a_flipped_tag_bad_padding_and_non_xml_get_one_answer() {
    let (gcm_uri, _, gcm_value) = VECTORS[0];
    let (cbc_uri, _, cbc_value) = VECTORS[2];
    let mut flipped_tag = unb64(gcm_value);
    *flipped_tag.last_mut().unwrap() ^= 0x01;
    // In CBC the last plaintext byte is the previous ciphertext byte XOR the decrypted
    // block: XOR-ing that byte with the padding length N makes the padding byte 0.
    let n = 16 - CONTENT.len() % 16;
    let mut bad_padding = unb64(cbc_value);
    let at = bad_padding.len() - 17;
    bad_padding[at] ^= n as u8;
    let cases = [
        (
            "wrong GCM key",
            decrypt_fault(&[9; 16], gcm_uri, gcm_value).await,
        ),
        (
            "wrong CBC key",
            decrypt_fault(&[9; 16], cbc_uri, cbc_value).await,
        ),
        (
            "flipped tag byte",
            decrypt_fault(KEY128, gcm_uri, &b64(&flipped_tag)).await,
        ),
        (
            "padding byte 0",
            decrypt_fault(KEY128, cbc_uri, &b64(&bad_padding)).await,
        ),
        (
            "plaintext not XML",
            decrypt_fault(KEY128, gcm_uri, NOT_XML_GCM).await,
        ),
    ];
    for (what, fault) in cases {
        assert_eq!(fault.kind(), FaultKind::FailedCheck, "{what}: {fault}");
        assert_eq!(fault.reason(), UNDECRYPTABLE, "{what}");
    }
}

#[tokio::test]
async fn malformed_encrypted_data_is_invalid_security() {
    let (gcm_uri, _, gcm_value) = VECTORS[0];
    let (cbc_uri, _, cbc_value) = VECTORS[2];
    let truncated_gcm = b64(&unb64(gcm_value)[..27]);
    let f = decrypt_fault(KEY128, gcm_uri, &truncated_gcm).await;
    assert_eq!(f.kind(), FaultKind::InvalidSecurity);
    assert!(f.reason().contains("shorter than"), "{}", f.reason());
    let ragged_cbc = b64(&unb64(cbc_value)[..40]);
    let f = decrypt_fault(KEY128, cbc_uri, &ragged_cbc).await;
    assert_eq!(f.kind(), FaultKind::InvalidSecurity);
    assert!(f.reason().contains("whole number"), "{}", f.reason());
    let f = decrypt_fault(KEY128, gcm_uri, "not*base64!").await;
    assert_eq!(f.kind(), FaultKind::InvalidSecurity);
    assert!(f.reason().contains("not base64"), "{}", f.reason());
    let no_value = format!(
        r#"<xenc:EncryptedData xmlns:xenc="{XENC_NS}"><xenc:EncryptionMethod Algorithm="{gcm_uri}"/><xenc:CipherData/></xenc:EncryptedData>"#
    );
    let f = fault_of(through(vec![decrypt(KEY128)], envelope_with(&no_value)).await);
    assert_eq!(f.kind(), FaultKind::InvalidSecurity);
    assert!(f.reason().contains("CipherValue"), "{}", f.reason());
    let crowded = format!("{}<extra/>", encrypted_data(gcm_uri, gcm_value));
    let f = fault_of(through(vec![decrypt(KEY128)], envelope_with(&crowded)).await);
    assert_eq!(f.kind(), FaultKind::InvalidSecurity);
    assert!(f.reason().contains("only element"), "{}", f.reason());
}

#[tokio::test]
async fn unknown_algorithms_and_keys_that_do_not_fit_are_unsupported() {
    let f = decrypt_fault(KEY128, TRIPLEDES, VECTORS[0].2).await;
    assert_eq!(f.kind(), FaultKind::UnsupportedAlgorithm);
    assert!(f.reason().contains(TRIPLEDES), "{}", f.reason());
    // aes128-gcm with a 32-byte key.
    let f = decrypt_fault(KEY256, VECTORS[0].0, VECTORS[0].2).await;
    assert_eq!(f.kind(), FaultKind::UnsupportedAlgorithm);
    assert!(f.reason().contains("does not fit"), "{}", f.reason());
}

#[tokio::test]
async fn plain_bodies_pass_unless_encryption_is_required() {
    assert_eq!(
        body_of(through(vec![decrypt(KEY128)], envelope_with(CONTENT)).await),
        CONTENT
    );
    let strict: Arc<dyn Handler> = Arc::new(Decrypt::new(key(KEY128), true));
    let f = fault_of(through(vec![strict], envelope_with(CONTENT)).await);
    assert_eq!(f.kind(), FaultKind::InvalidSecurity);
    assert!(f.reason().contains("not encrypted"), "{}", f.reason());
}

#[test]
fn a_key_that_does_not_fit_the_algorithm_is_refused() {
    let err = Encrypt::new(key(KEY128), EncryptionAlgorithm::Aes256Gcm).unwrap_err();
    assert_eq!(
        err.to_string(),
        "aes256-gcm needs a 32-byte key, not 16 bytes"
    );
}

fn secret() -> QName {
    QName::new("urn:example:secret", "Secret")
}

fn header_text(envelope: &Envelope, name: &QName) -> Option<String> {
    let block = envelope.header(name)?;
    envelope.header_text(block)
}

#[tokio::test]
async fn an_encrypted_header_from_an_independent_tool_is_restored() {
    let envelope = Envelope::parse(
        ENCRYPTED_HEADER_ENVELOPE.as_bytes().to_vec().into(),
        &Limits::default(),
    )
    .unwrap();
    let open: Arc<dyn Handler> = Arc::new(Decrypt::new(key(KEY128), true).header(secret()));
    let Outcome::Continue(m) = through(vec![open], envelope).await else {
        panic!("decrypt failed")
    };
    let env = m.envelope();
    assert_eq!(
        header_text(env, &secret()).as_deref(),
        Some("the vault code is 1234")
    );
    let wrapper = QName::new(
        lather_handlers::WSSE11_NS,
        lather_handlers::ENCRYPTED_HEADER,
    );
    assert!(
        env.header(&wrapper).is_none(),
        "the EncryptedHeader is gone"
    );
    assert_eq!(&env.body()[..], br#"<q:ping xmlns:q="urn:quotes"/>"#);
    let block = env.header(&secret()).unwrap();
    assert_eq!(&env.as_bytes()[block.range()], SECRET_BLOCK.as_bytes());
}

#[tokio::test]
async fn an_encrypted_header_relying_on_outer_declarations_is_restored() {
    // The same message with the wsse11 prefix declared on the Envelope and xenc on the
    // Header: the block is read where it stands, with those in scope.
    let wsse11 = format!(r#" xmlns:wsse11="{}""#, lather_handlers::WSSE11_NS);
    let xenc = r#" xmlns:xenc="http://www.w3.org/2001/04/xmlenc#""#;
    let moved = ENCRYPTED_HEADER_ENVELOPE
        .replacen(&wsse11, "", 1)
        .replacen(xenc, "", 1)
        .replacen("<env:Envelope", &format!("<env:Envelope{wsse11}"), 1)
        .replacen("<env:Header>", &format!("<env:Header{xenc}>"), 1);
    assert!(
        !moved.contains(&format!("EncryptedHeader{wsse11}")),
        "{moved}"
    );
    let envelope = Envelope::parse(moved.into_bytes().into(), &Limits::default()).unwrap();
    let open: Arc<dyn Handler> = Arc::new(Decrypt::new(key(KEY128), true).header(secret()));
    let Outcome::Continue(m) = through(vec![open], envelope).await else {
        panic!("decrypt failed")
    };
    assert_eq!(
        header_text(m.envelope(), &secret()).as_deref(),
        Some("the vault code is 1234")
    );
}

#[tokio::test]
async fn header_encryption_round_trips_and_leaves_the_body_alone() {
    let bytes = EnvelopeBuilder::new(SoapVersion::V11)
        .header(SECRET_BLOCK.to_owned().into())
        .body(r#"<q:ping xmlns:q="urn:quotes">x</q:ping>"#.to_owned().into())
        .build();
    let envelope = Envelope::parse(bytes, &Limits::default()).unwrap();
    for algorithm in [
        EncryptionAlgorithm::Aes256Gcm,
        EncryptionAlgorithm::Aes256Cbc,
    ] {
        let seal: Arc<dyn Handler> = Arc::new(
            Encrypt::new(key(KEY256), algorithm)
                .unwrap()
                .header(secret()),
        );
        let Outcome::Continue(sealed) = through(vec![seal], envelope.clone()).await else {
            panic!("encrypt failed")
        };
        let text = String::from_utf8(sealed.envelope().as_bytes().to_vec()).unwrap();
        assert!(!text.contains("vault code"), "{text}");
        assert!(text.contains("EncryptedHeader") && text.contains(algorithm.uri()));
        assert_eq!(sealed.envelope().body(), envelope.body());

        let open: Arc<dyn Handler> = Arc::new(Decrypt::new(key(KEY256), true).header(secret()));
        let Outcome::Continue(opened) = through(vec![open], sealed.into_envelope()).await else {
            panic!("decrypt failed")
        };
        assert_eq!(
            header_text(opened.envelope(), &secret()).as_deref(),
            Some("the vault code is 1234")
        );
    }
}

#[tokio::test]
async fn an_encrypted_header_of_another_name_or_key_fails_alike() {
    let envelope = Envelope::parse(
        ENCRYPTED_HEADER_ENVELOPE.as_bytes().to_vec().into(),
        &Limits::default(),
    )
    .unwrap();
    let other = QName::new("urn:example:secret", "Other");
    for handler in [
        Decrypt::new(key(KEY128), false).header(other),
        Decrypt::new(key(&[7u8; 16]), false).header(secret()),
    ] {
        let outcome = through(vec![Arc::new(handler)], envelope.clone()).await;
        let Outcome::Fault(f) = outcome else {
            panic!("{outcome:?}")
        };
        assert_eq!(f.kind(), FaultKind::FailedCheck);
        assert_eq!(f.reason(), UNDECRYPTABLE);
    }
    // Nothing encrypted: passes, unless required.
    let plain = envelope_with(r#"<q:ping xmlns:q="urn:quotes"/>"#);
    let lenient: Arc<dyn Handler> = Arc::new(Decrypt::new(key(KEY128), false).header(secret()));
    assert!(matches!(
        through(vec![lenient], plain.clone()).await,
        Outcome::Continue(_)
    ));
    let strict: Arc<dyn Handler> = Arc::new(Decrypt::new(key(KEY128), true).header(secret()));
    let Outcome::Fault(f) = through(vec![strict], plain).await else {
        panic!("a required encrypted header was not asked for")
    };
    assert_eq!(f.kind(), FaultKind::InvalidSecurity);
}
