//! The stream representation: every message comes back byte for byte, in any order of
//! shapes, and a repeated shape costs only its changed values.

use bytes::{Bytes, BytesMut};
use lather_context::stream::{
    CodecLimits, Decoder, EncodeError, Encoder, FrameHead, FrameKind, StreamMessage,
};
use proptest::prelude::*;

const FIXTURE: &str = include_str!("../../../bench/context/wsa-echo.xml");

fn message(body: &str) -> StreamMessage {
    StreamMessage {
        headers: vec![
            (
                "content-type".into(),
                Bytes::from_static(b"application/soap+xml; charset=utf-8"),
            ),
            ("soapaction".into(), Bytes::from_static(b"urn:echo")),
        ],
        body: Bytes::copy_from_slice(body.as_bytes()),
    }
}

/// Splits `bytes` into frames: (kind, payload).
fn frames(mut bytes: &[u8]) -> Vec<(FrameKind, Vec<u8>)> {
    let mut out = Vec::new();
    while !bytes.is_empty() {
        let kind = FrameKind::try_from(bytes[0]).unwrap();
        let (mut len, mut shift, mut i) = (0usize, 0, 1);
        loop {
            len |= ((bytes[i] & 0x7f) as usize) << shift;
            shift += 7;
            i += 1;
            if bytes[i - 1] & 0x80 == 0 {
                break;
            }
        }
        out.push((kind, bytes[i..i + len].to_vec()));
        bytes = &bytes[i + len..];
    }
    out
}

/// Encodes each message, decodes the frames, and returns the bytes each message took.
fn round_trip(messages: &[StreamMessage], limits: CodecLimits) -> Vec<usize> {
    let mut encoder = Encoder::new(limits);
    let mut decoder = Decoder::new(limits);
    let mut sizes = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        let mut out = BytesMut::new();
        encoder
            .encode(&mut out, FrameHead::Request(i as u32 + 1), m)
            .unwrap();
        sizes.push(out.len());
        let mut got = None;
        for (kind, payload) in frames(&out) {
            if let Some(d) = decoder.decode(kind, &payload).unwrap() {
                got = Some(d);
            }
        }
        let got = got.expect("a message frame");
        assert_eq!(got.head, FrameHead::Request(i as u32 + 1));
        assert_eq!(&got.message, m, "message {i} came back different");
    }
    sizes
}

#[test]
fn the_fixture_goes_whole_once_and_then_as_its_changed_message_id() {
    let first = message(FIXTURE);
    let second = message(&FIXTURE.replace(
        "6b29fc40-ca47-1067-b31d-00dd010662da",
        "0e6c0c3a-1f0d-4f7e-9a3b-5c2d8e1f4a67",
    ));
    let sizes = round_trip(&[first, second], CodecLimits::default());
    assert!(
        sizes[0] > FIXTURE.len(),
        "the first carries its schema: {sizes:?}"
    );
    // The second carries only the new MessageID and the tags of the unchanged values.
    assert!(sizes[1] < 60, "{sizes:?}");
    eprintln!("fixture {} bytes; on the stream {sizes:?}", FIXTURE.len());
}

#[test]
fn a_new_shape_after_the_last_schema_is_refused_and_changes_nothing() {
    let limits = CodecLimits {
        max_schemas: 1,
        ..CodecLimits::default()
    };
    let mut encoder = Encoder::new(limits);
    let mut out = BytesMut::new();
    encoder
        .encode(&mut out, FrameHead::Request(1), &message("<a>1</a>"))
        .unwrap();
    let before = out.len();
    assert_eq!(
        encoder.encode(&mut out, FrameHead::Request(2), &message("<b>1</b>")),
        Err(EncodeError::SchemasFull(1))
    );
    assert_eq!(out.len(), before);
    assert_eq!(
        encoder.encode(&mut out, FrameHead::Request(3), &message("<a")),
        Err(EncodeError::Shape(
            lather_context::stream::shape::ShapeError::Unterminated(0)
        ))
    );
    encoder
        .encode(&mut out, FrameHead::Request(4), &message("<a>2</a>"))
        .unwrap();
    assert_eq!(encoder.schemas(), 1);
}

#[test]
fn a_message_of_a_schema_never_sent_is_refused() {
    let mut encoder = Encoder::new(CodecLimits::default());
    let mut out = BytesMut::new();
    encoder
        .encode(&mut out, FrameHead::Request(1), &message("<a>1</a>"))
        .unwrap();
    let frames = frames(&out);
    let mut decoder = Decoder::new(CodecLimits::default());
    // The MESSAGE without its SCHEMA.
    let e = decoder.decode(frames[1].0, &frames[1].1).unwrap_err();
    assert!(e.to_string().contains("undefined schema"), "{e}");
}

#[test]
fn replies_keep_their_status() {
    let limits = CodecLimits::default();
    let mut encoder = Encoder::new(limits);
    let mut decoder = Decoder::new(limits);
    let mut out = BytesMut::new();
    encoder
        .encode(&mut out, FrameHead::Reply(7, 500), &message("<f>x</f>"))
        .unwrap();
    let got: Vec<_> = frames(&out)
        .into_iter()
        .filter_map(|(k, p)| decoder.decode(k, &p).unwrap())
        .collect();
    assert_eq!(got[0].head, FrameHead::Reply(7, 500));
}

/// An XML-ish document: elements with attributes (some namespace declarations), text with
/// references, blank runs, comments, CDATA, empty and self-closed elements.
fn document() -> impl Strategy<Value = String> {
    let text = "[a-z &;<>'\"\\-0-9\u{e9}\u{4e2d}]{0,12}".prop_map(|t| {
        t.replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
    });
    let leaf = prop_oneof![
        text.clone().prop_map(|t| format!("<v>{t}</v>")),
        Just("<e/>".to_owned()),
        Just("<e></e>".to_owned()),
        text.clone().prop_map(|t| format!("<c><![CDATA[{t}]]></c>")),
        Just("<!-- note -->".to_owned()),
        ("[a-z]{1,4}", "[a-z0-9 ]{0,6}")
            .prop_map(|(n, v)| format!("<a {n}=\"{v}\" xmlns:p='urn:p'/>")),
        text.prop_map(|t| format!("<m>{t}<b>x</b>{t}</m>")),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        (
            proptest::collection::vec(inner, 0..5),
            prop_oneof![Just(""), Just("\n  "), Just(" ")],
            "[a-z0-9]{0,5}",
        )
            .prop_map(|(children, ws, attr)| {
                format!(
                    "<n:g xmlns:n=\"urn:n\" id='{attr}'>{ws}{}{ws}</n:g>",
                    children.join(ws)
                )
            })
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn any_sequence_of_documents_comes_back_byte_for_byte(
        docs in proptest::collection::vec(document(), 1..8),
        repeats in proptest::collection::vec(0usize..8, 0..8),
    ) {
        // Later messages repeat earlier shapes with other values, so the deltas are used.
        let mut messages: Vec<StreamMessage> = docs.iter().map(|d| message(d)).collect();
        for r in repeats {
            let d = &docs[r % docs.len()];
            messages.push(message(&d.replace('1', "22").replace("x", "")));
        }
        round_trip(&messages, CodecLimits::default());
    }

    #[test]
    fn any_bytes_are_refused_or_come_back_unchanged(body in proptest::collection::vec(any::<u8>(), 0..200)) {
        let m = StreamMessage { headers: vec![], body: Bytes::from(body) };
        let mut encoder = Encoder::new(CodecLimits::default());
        let mut out = BytesMut::new();
        if encoder.encode(&mut out, FrameHead::Request(1), &m).is_ok() {
            let mut decoder = Decoder::new(CodecLimits::default());
            let got: Vec<_> = frames(&out).into_iter().filter_map(|(k, p)| decoder.decode(k, &p).unwrap()).collect();
            prop_assert_eq!(&got[0].message, &m);
        }
    }

    #[test]
    fn hostile_frames_are_errors_not_panics(
        frames in proptest::collection::vec((1u8..6, proptest::collection::vec(any::<u8>(), 0..64)), 1..10),
    ) {
        let limits = CodecLimits { max_schemas: 4, max_values: 16, max_message_bytes: 1024 };
        let mut decoder = Decoder::new(limits);
        for (kind, payload) in frames {
            let kind = FrameKind::try_from(kind).unwrap();
            if decoder.decode(kind, &payload).is_err() {
                break;
            }
        }
    }
}
