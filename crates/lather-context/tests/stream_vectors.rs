//! The `lather-stream/1` test vectors: lather's encoder writes, byte for byte, what an
//! independent encoder written from the specification (`docs/context/stream_vectors.py`,
//! output in `docs/context/stream-vectors.json`) writes for the same messages — schemas,
//! shapes, and the choice of tag 0, 1 or 2 for each value — and lather's decoder reads
//! those bytes back to the same messages.

use bytes::{Bytes, BytesMut};
use lather_context::stream::{
    CodecLimits, Decoded, Decoder, Encoder, FrameHead, FrameKind, StreamMessage,
};
use serde_json::Value;

const VECTORS: &str = include_str!("../../../docs/context/stream-vectors.json");

/// Lowercase hex of `bytes`.
fn to_hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for &b in bytes {
        out.push(DIGITS[usize::from(b >> 4)] as char);
        out.push(DIGITS[usize::from(b & 0x0f)] as char);
    }
    out
}

/// The bytes of a hex string.
fn from_hex(hex: &str) -> Vec<u8> {
    fn digit(c: u8) -> u8 {
        match c {
            b'0'..=b'9' => c - b'0',
            b'a'..=b'f' => c - b'a' + 10,
            b'A'..=b'F' => c - b'A' + 10,
            _ => panic!("not a hex digit: {:?}", c as char),
        }
    }
    let hex = hex.as_bytes();
    assert!(hex.len().is_multiple_of(2), "odd number of hex digits");
    hex.chunks(2)
        .map(|pair| (digit(pair[0]) << 4) | digit(pair[1]))
        .collect()
}

/// Splits `bytes` into frames: kind byte, varint payload length, payload.
fn frames(mut bytes: &[u8], at: &str) -> Vec<(FrameKind, Vec<u8>)> {
    let mut out = Vec::new();
    while !bytes.is_empty() {
        let kind = FrameKind::try_from(bytes[0])
            .unwrap_or_else(|e| panic!("{at}: bad frame kind {}: {e}", bytes[0]));
        let (mut len, mut shift, mut i) = (0usize, 0u32, 1usize);
        loop {
            let b = *bytes
                .get(i)
                .unwrap_or_else(|| panic!("{at}: frame length cut short"));
            assert!(shift < 35, "{at}: frame length longer than five bytes");
            len |= usize::from(b & 0x7f) << shift;
            shift += 7;
            i += 1;
            if b & 0x80 == 0 {
                break;
            }
        }
        assert!(
            bytes.len() >= i + len,
            "{at}: frame payload cut short ({len} bytes announced, {} left)",
            bytes.len() - i
        );
        out.push((kind, bytes[i..i + len].to_vec()));
        bytes = &bytes[i + len..];
    }
    out
}

fn str_field<'a>(v: &'a Value, key: &str, at: &str) -> &'a str {
    v[key]
        .as_str()
        .unwrap_or_else(|| panic!("{at}: `{key}` is not a string"))
}

fn u64_field(v: &Value, key: &str, at: &str) -> u64 {
    v[key]
        .as_u64()
        .unwrap_or_else(|| panic!("{at}: `{key}` is not an unsigned integer"))
}

/// The frame head and message a vector describes.
fn expected(v: &Value, at: &str) -> Decoded {
    let id = u32::try_from(u64_field(v, "id", at)).expect("request id fits u32");
    let head = match str_field(v, "kind", at) {
        "request" => FrameHead::Request(id),
        "reply" => {
            let status = u16::try_from(u64_field(v, "status", at)).expect("status fits u16");
            FrameHead::Reply(id, status)
        }
        other => panic!("{at}: unknown kind {other:?}"),
    };
    let headers = v["headers"]
        .as_array()
        .unwrap_or_else(|| panic!("{at}: `headers` is not an array"))
        .iter()
        .map(|pair| {
            let name = pair[0].as_str().expect("header name");
            let value = pair[1].as_str().expect("header value");
            (name.to_owned(), Bytes::copy_from_slice(value.as_bytes()))
        })
        .collect();
    let body = Bytes::copy_from_slice(str_field(v, "body", at).as_bytes());
    Decoded {
        head,
        message: StreamMessage { headers, body },
    }
}

#[test]
fn lather_matches_the_independent_vectors() {
    let doc: Value = serde_json::from_str(VECTORS).expect("stream-vectors.json is JSON");
    assert_eq!(doc["format"], "lather-stream/1");
    let cases = doc["cases"].as_array().expect("`cases` is an array");
    assert!(!cases.is_empty(), "no cases");
    let mut checked = 0;
    for case in cases {
        let name = str_field(case, "name", "case");
        let messages = case["messages"]
            .as_array()
            .unwrap_or_else(|| panic!("case {name}: `messages` is not an array"));
        // One fresh encoder and one fresh decoder per case: one direction of a stream.
        let mut encoder = Encoder::new(CodecLimits::default());
        let mut decoder = Decoder::new(CodecLimits::default());
        for (index, vector) in messages.iter().enumerate() {
            let at = format!("case {name:?}, message {index}");
            let want = expected(vector, &at);
            let hex = str_field(vector, "frames", &at);

            // lather's encoder writes the vector's bytes.
            let mut out = BytesMut::new();
            encoder
                .encode(&mut out, want.head, &want.message)
                .unwrap_or_else(|e| panic!("{at}: lather refused to encode: {e}"));
            assert_eq!(
                to_hex(&out),
                hex,
                "{at}: lather's encoder (left) differs from the vector (right)"
            );

            // lather's decoder reads the vector's bytes back to the message.
            let bytes = from_hex(hex);
            let frames = frames(&bytes, &at);
            let (last, schemas) = frames
                .split_last()
                .unwrap_or_else(|| panic!("{at}: no frames"));
            for (kind, payload) in schemas {
                assert_eq!(
                    *kind,
                    FrameKind::Schema,
                    "{at}: only SCHEMA frames come first"
                );
                let got = decoder
                    .decode(*kind, payload)
                    .unwrap_or_else(|e| panic!("{at}: lather could not read the SCHEMA: {e}"));
                assert!(got.is_none(), "{at}: a SCHEMA frame gave a message");
            }
            let want_kind = match want.head {
                FrameHead::Request(_) => FrameKind::Message,
                FrameHead::Reply(..) => FrameKind::Reply,
            };
            assert_eq!(last.0, want_kind, "{at}: last frame kind");
            let got = decoder
                .decode(last.0, &last.1)
                .unwrap_or_else(|e| panic!("{at}: lather could not read the message: {e}"))
                .unwrap_or_else(|| panic!("{at}: the message frame gave no message"));
            assert_eq!(
                got, want,
                "{at}: decoded (left) differs from the vector (right)"
            );
            checked += 1;
        }
    }
    assert!(checked > 0);
}
