//! The binary frame decoder: every encodable frame (notification or SubscriptionEnd)
//! round-trips, and no byte string makes the decoder panic under any flags (it answers a
//! frame, "need more" or an error).

use lather_eventing::binding::binary::{self, Field, FieldKind, Frame};
use proptest::prelude::*;

fn kind() -> impl Strategy<Value = FieldKind> {
    prop_oneof![
        Just(FieldKind::ReferenceParameter),
        Just(FieldKind::Header),
        Just(FieldKind::ReferenceParameterXml),
    ]
}

fn frame() -> impl Strategy<Value = Frame> {
    (
        "[ -~]{0,80}",
        any::<u64>(),
        any::<u64>(),
        ".{0,40}",
        ".{0,40}",
        prop::collection::vec(
            (kind(), ".{0,20}", ".{0,40}").prop_map(|(kind, name, value)| Field {
                kind,
                name,
                value,
            }),
            0..6,
        ),
        prop::collection::vec(any::<u8>(), 0..300),
    )
        .prop_map(
            |(subscription, seq, published_ns, action, topic, fields, payload)| Frame {
                subscription,
                seq,
                published_ns,
                action,
                topic,
                fields,
                payload,
            },
        )
}

proptest! {
    #[test]
    fn frames_round_trip(frames in prop::collection::vec(frame(), 1..4)) {
        let mut stream = Vec::new();
        for f in &frames {
            binary::encode(f, &mut stream).unwrap();
        }
        let mut at = 0;
        for f in &frames {
            let (got, used) = binary::decode(&stream[at..]).unwrap().unwrap();
            prop_assert_eq!(&got, f);
            // Every proper prefix asks for more bytes.
            for cut in [0, 1, used / 2, used - 1] {
                prop_assert_eq!(binary::decode(&stream[at..at + cut]).unwrap(), None);
            }
            at += used;
        }
        prop_assert_eq!(at, stream.len());
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
        let _ = binary::decode(&bytes);
        let _ = binary::decode_message(&bytes);
        // Under every flag combination: plain, compressed, with a kind byte, both.
        for flags in 0..4u8 {
            let mut framed = vec![b'L', b'B', 1, flags];
            framed.extend_from_slice(&(bytes.len() as u32).to_be_bytes());
            framed.extend_from_slice(&bytes);
            let _ = binary::decode_message(&framed);
        }
    }

    #[test]
    fn end_frames_round_trip(
        subscription in "[ -~]{0,80}",
        status in ".{0,60}",
        reason in ".{0,200}",
    ) {
        let end = binary::EndFrame { subscription, status, reason };
        let mut out = Vec::new();
        binary::encode_end(&end, &mut out).unwrap();
        let (got, used) = binary::decode_message(&out).unwrap().unwrap();
        prop_assert_eq!(got, binary::BinaryMessage::End(end));
        prop_assert_eq!(used, out.len());
        prop_assert_eq!(binary::decode_message(&out[..used - 1]).unwrap(), None);
    }
}
