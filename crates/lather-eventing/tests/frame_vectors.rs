//! The stream frames against vectors made by an independent Python encoder/decoder
//! written from the documentation (`tests/vectors/binary_frames.py`, run as
//! `python3 crates/lather-eventing/tests/vectors/binary_frames.py >
//! crates/lather-eventing/tests/vectors/binary_frames.txt`): lather.bin notifications plain
//! and gzip-compressed, the SubscriptionEnd frame, soap.tcp frames plain and compressed.

use lather_eventing::binding::binary::{self, BinaryMessage, EndFrame, Field, FieldKind, Frame};
use lather_eventing::binding::tcp::decode_soap_frame;

const VECTORS: &str = include_str!("vectors/binary_frames.txt");

fn vector(name: &str) -> Vec<u8> {
    let line = VECTORS
        .lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
        .unwrap_or_else(|| panic!("no vector {name}"));
    (0..line.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&line[i..i + 2], 16).unwrap())
        .collect()
}

const SUB: &str = "urn:uuid:00000000-0000-4000-8000-000000000001";

fn quote() -> Vec<u8> {
    let mut p = br#"<q:Quote xmlns:q="urn:q" n="7">"#.to_vec();
    p.extend_from_slice(&b"ab".repeat(600));
    p.extend_from_slice(b"</q:Quote>");
    p
}

fn fields_frame() -> Frame {
    let field = |kind, name: &str, value: &str| Field {
        kind,
        name: name.into(),
        value: value.into(),
    };
    Frame {
        subscription: SUB.into(),
        seq: 7,
        published_ns: 1_700_000_000_000_000_000,
        action: "urn:q:Quote".into(),
        topic: "{urn:q}Quote".into(),
        fields: vec![
            field(FieldKind::ReferenceParameter, "{urn:k}Key", "42"),
            field(
                FieldKind::ReferenceParameterXml,
                "",
                r#"<k:R xmlns:k="urn:k"><k:x>1</k:x></k:R>"#,
            ),
            field(FieldKind::Header, "{urn:auth}Auth", "tök"),
        ],
        payload: quote(),
    }
}

#[test]
fn plain_frames_encode_byte_for_byte_and_decode() {
    let doc = Frame {
        subscription: "s".into(),
        seq: 2,
        published_ns: 3,
        action: "a".into(),
        topic: String::new(),
        fields: vec![Field {
            kind: FieldKind::Header,
            name: "n".into(),
            value: "v".into(),
        }],
        payload: b"<e/>".to_vec(),
    };
    for (name, frame) in [
        ("notification_doc_example", doc),
        ("notification_fields", fields_frame()),
    ] {
        let bytes = vector(name);
        let mut out = Vec::new();
        binary::encode(&frame, &mut out).unwrap();
        assert!(out == bytes, "{name}: encoded bytes differ");
        assert_eq!(binary::decode(&bytes).unwrap(), Some((frame, bytes.len())));
    }
}

#[test]
fn a_python_compressed_frame_decodes_to_the_same_notification() {
    let bytes = vector("notification_gzip");
    assert_eq!(bytes[3], binary::FLAG_GZIP);
    let (got, used) = binary::decode(&bytes).unwrap().unwrap();
    assert_eq!(used, bytes.len());
    assert!(got == fields_frame(), "the same notification");
}

#[test]
fn the_subscription_end_frame_encodes_byte_for_byte_and_decodes() {
    let bytes = vector("subscription_end");
    let end = EndFrame {
        subscription: SUB.into(),
        status: "http://www.w3.org/2011/03/ws-evt/SourceShuttingDown".into(),
        reason: "going away ü".into(),
    };
    let mut out = Vec::new();
    binary::encode_end(&end, &mut out).unwrap();
    assert_eq!(out, bytes);
    assert_eq!(
        binary::decode_message(&bytes).unwrap(),
        Some((BinaryMessage::End(end), bytes.len()))
    );
}

#[test]
fn soap_tcp_frames_plain_and_compressed_decode_to_the_envelope() {
    let mut envelope =
        br#"<s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope"><s:Body>"#.to_vec();
    envelope.extend_from_slice(&quote());
    envelope.extend_from_slice(b"</s:Body></s:Envelope>");
    for name in ["soap_tcp_plain", "soap_tcp_gzip"] {
        let bytes = vector(name);
        let (got, used) = decode_soap_frame(&bytes).unwrap().unwrap();
        assert_eq!(used, bytes.len());
        assert!(got[..] == envelope[..], "{name}: the same envelope");
    }
    assert_eq!(vector("soap_tcp_gzip")[0] & 0x80, 0x80);
    assert_eq!(vector("soap_tcp_plain")[0] & 0x80, 0);
}
