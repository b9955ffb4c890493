//! Frames survive encode → decode unchanged, and no byte string makes the decoder panic.

use bytes::Bytes;
use lather_envelope::{Fault, FaultKind, QName, SoapVersion};
use lather_pipeline::{Direction, Identity, Patch, PatchOp, Property};
use lather_remote::frame::{
    Answer, CallRequest, FrameError, Payload, Progress, ProgressKind, RemoteVerdict, Reply,
    WorkerTiming,
};
use proptest::prelude::*;

fn text() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9:/._ é-]{0,24}"
}

fn blob() -> impl Strategy<Value = Bytes> {
    proptest::collection::vec(any::<u8>(), 0..64).prop_map(Bytes::from)
}

fn qname() -> impl Strategy<Value = QName> {
    ("[a-z:/.]{0,16}", "[A-Za-z][A-Za-z0-9]{0,10}").prop_map(|(ns, l)| QName::new(ns, l))
}

fn payload() -> impl Strategy<Value = Payload> {
    prop_oneof![
        (
            proptest::collection::vec(blob(), 0..4),
            proptest::option::of(blob())
        )
            .prop_map(|(headers, body)| Payload::Parts { headers, body }),
        blob().prop_map(Payload::Whole),
    ]
}

prop_compose! {
    fn request()(
        id in any::<u128>(),
        handler in text(),
        attempt in any::<u32>(),
        deadline in any::<u64>(),
        heartbeat_ms in any::<u32>(),
        trace in proptest::option::of(text()),
        service in text(),
        action in proptest::option::of(text()),
        client in proptest::option::of(text()),
        direction in prop_oneof![Just(Direction::Request), Just(Direction::Response), Just(Direction::Fault)],
        soap in prop_oneof![Just(SoapVersion::V11), Just(SoapVersion::V12)],
        namespaces in proptest::collection::vec((text(), text()), 0..4),
        payload in payload(),
    ) -> CallRequest {
        CallRequest { id, handler, attempt, deadline_unix_ms: deadline, heartbeat_ms, trace, service, action, client, direction, soap, namespaces, payload }
    }
}

fn op() -> impl Strategy<Value = PatchOp> {
    prop_oneof![
        (qname(), blob()).prop_map(|(q, b)| PatchOp::AddHeader(q, b)),
        (qname(), blob()).prop_map(|(q, b)| PatchOp::ReplaceHeader(q, b)),
        qname().prop_map(PatchOp::RemoveHeader),
        blob().prop_map(PatchOp::ReplaceBody),
        text().prop_map(|user| PatchOp::SetProperty(Property::new(Identity(user)))),
    ]
}

fn fault() -> impl Strategy<Value = Fault> {
    (
        0..FaultKind::ALL.len(),
        text(),
        proptest::collection::vec(qname(), 0..3),
        proptest::option::of(qname()),
        proptest::option::of(text()),
    )
        .prop_map(|(k, reason, names, problem, relates)| {
            let mut f = Fault::with_reason(FaultKind::ALL[k], reason);
            if !names.is_empty() {
                f = f.not_understood(names);
            }
            if let Some(p) = problem {
                f = f.problem_header(p);
            }
            if let Some(r) = relates {
                f = f.relates_to(r);
            }
            f
        })
}

fn answer() -> impl Strategy<Value = Answer> {
    let outcome = prop_oneof![
        proptest::collection::vec(op(), 0..5).prop_map(|ops| RemoteVerdict::Continue(
            ops.into_iter().fold(Patch::new(), Patch::with)
        )),
        blob().prop_map(RemoteVerdict::Respond),
        fault().prop_map(RemoteVerdict::Fault),
    ];
    (any::<u128>(), any::<(u32, u32)>(), outcome).prop_map(
        |(id, (handler_us, worker_us), outcome)| Answer {
            id,
            timing: WorkerTiming {
                handler_us,
                worker_us,
            },
            verdict: outcome,
        },
    )
}

proptest! {
    #[test]
    fn requests_round_trip(r in request()) {
        let bytes = r.encode().unwrap();
        prop_assert_eq!(CallRequest::decode(bytes).unwrap(), r);
    }

    #[test]
    fn answers_round_trip(a in answer()) {
        let bytes = a.encode().unwrap();
        prop_assert_eq!(Answer::decode(bytes).unwrap(), a);
    }

    #[test]
    fn progress_round_trips_and_replies_tell_progress_from_answers(
        id in any::<u128>(),
        heartbeat in any::<bool>(),
        a in answer(),
    ) {
        let kind = if heartbeat { ProgressKind::Heartbeat } else { ProgressKind::Ack };
        let p = Progress { id, kind };
        let bytes = p.encode();
        prop_assert_eq!(bytes.len(), 22);
        prop_assert_eq!(Progress::decode(bytes.clone()).unwrap(), p);
        prop_assert_eq!(Reply::decode(bytes.clone()).unwrap(), Reply::Progress(p));
        prop_assert!(Answer::decode(bytes.clone()).is_err());
        prop_assert!(CallRequest::decode(bytes).is_err());
        let answer = a.encode().unwrap();
        prop_assert_eq!(Reply::decode(answer.clone()).unwrap(), Reply::Answer(a));
        prop_assert!(Progress::decode(answer).is_err());
    }

    #[test]
    fn arbitrary_bytes_decode_to_an_error_or_a_frame(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
        let _ = CallRequest::decode(Bytes::from(bytes.clone()));
        let _ = Reply::decode(Bytes::from(bytes.clone()));
        let _ = Progress::decode(Bytes::from(bytes.clone()));
        let _ = Answer::decode(Bytes::from(bytes));
    }

    #[test]
    fn damaged_frames_are_refused_or_decoded_without_panic(
        r in request(),
        a in answer(),
        cut in any::<prop::sample::Index>(),
        flip in any::<prop::sample::Index>(),
        value in any::<u8>(),
    ) {
        for frame in [r.encode().unwrap(), a.encode().unwrap()] {
            let truncated = frame.slice(..cut.index(frame.len()));
            prop_assert!(CallRequest::decode(truncated.clone()).is_err());
            prop_assert!(Answer::decode(truncated).is_err());
            let mut changed = frame.to_vec();
            let i = flip.index(changed.len());
            changed[i] = value;
            let _ = CallRequest::decode(Bytes::from(changed.clone()));
            let _ = Answer::decode(Bytes::from(changed));
        }
    }
}

#[test]
fn huge_lengths_and_counts_are_refused_before_anything_is_allocated() {
    let r = CallRequest {
        id: 1,
        handler: "h".into(),
        attempt: 0,
        deadline_unix_ms: 0,
        heartbeat_ms: 0,
        trace: None,
        service: "s".into(),
        action: None,
        client: None,
        direction: Direction::Request,
        soap: SoapVersion::V12,
        namespaces: vec![],
        payload: Payload::Parts {
            headers: vec![],
            body: None,
        },
    };
    let frame = r.encode().unwrap().to_vec();
    // The namespace count sits right after the handler, service and three absent options.
    let count_at = 4 + 1 + 1 + 16 + 4 + 8 + 4 + 1 + 1 + (2 + 1) + (2 + 1) + 3;
    assert_eq!(&frame[count_at..count_at + 2], &[0, 0]);
    let mut lying = frame.clone();
    lying[count_at..count_at + 2].copy_from_slice(&u16::MAX.to_be_bytes());
    assert_eq!(
        CallRequest::decode(Bytes::from(lying)),
        Err(FrameError::Truncated("namespace list"))
    );
    // Body flag 1 with a 4 GiB length.
    let mut big = frame[..frame.len() - 1].to_vec();
    big.extend_from_slice(&[1, 0xff, 0xff, 0xff, 0xff]);
    assert_eq!(
        CallRequest::decode(Bytes::from(big)),
        Err(FrameError::Truncated("body"))
    );
    let mut trailing = frame.clone();
    trailing.push(0);
    assert_eq!(
        CallRequest::decode(Bytes::from(trailing)),
        Err(FrameError::TrailingBytes(1))
    );
    let mut version = frame.clone();
    version[4] = 9;
    assert_eq!(
        CallRequest::decode(Bytes::from(version)),
        Err(FrameError::UnsupportedVersion(9))
    );
    assert_eq!(
        Answer::decode(Bytes::from(frame)),
        Err(FrameError::WrongKind(1))
    );
    assert_eq!(
        CallRequest::decode(Bytes::from_static(b"NOPE")),
        Err(FrameError::BadMagic)
    );
}
