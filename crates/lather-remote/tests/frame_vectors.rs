//! Frames written by an independent encoder (tests/vectors/make_frames.py, run from the
//! repository root as `python3 crates/lather-remote/tests/vectors/make_frames.py`) decode to
//! the values it wrote; every file of the fuzz corpus decodes without a panic and, when it
//! is a frame, encodes back to the same bytes.

use bytes::Bytes;
use lather_envelope::{FaultKind, QName, SoapVersion};
use lather_pipeline::{Direction, PatchOp};
use lather_remote::frame::{
    Answer, CallRequest, FrameError, Payload, Progress, ProgressKind, RemoteVerdict, Reply,
    WorkerTiming,
};
use std::path::PathBuf;

fn corpus() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/remote_frame")
}

fn read(name: &str) -> Bytes {
    Bytes::from(std::fs::read(corpus().join(name)).unwrap())
}

#[test]
fn a_parts_request_decodes_to_what_the_python_encoder_wrote() {
    let r = CallRequest::decode(read("request_parts.bin")).unwrap();
    assert_eq!(r.id, 0x0123456789ABCDEF0011223344556677);
    assert_eq!(r.attempt, 2);
    assert_eq!(r.deadline_unix_ms, 1_700_000_000_123);
    assert_eq!(r.heartbeat_ms, 250);
    assert_eq!(r.soap, SoapVersion::V12);
    assert_eq!(r.direction, Direction::Request);
    assert_eq!(r.handler, "auth");
    assert_eq!(r.service, "quotes");
    assert_eq!(r.action.as_deref(), Some("urn:getQuote"));
    assert_eq!(r.client.as_deref(), Some("127.0.0.1"));
    assert_eq!(r.trace, None);
    assert_eq!(r.namespaces, [("q".to_owned(), "urn:quotes".to_owned())]);
    let Payload::Parts { headers, body } = &r.payload else {
        panic!("expected parts, got {:?}", r.payload)
    };
    assert_eq!(
        headers[..],
        [Bytes::from_static(
            b"<w:Security xmlns:w=\"urn:wsse\"><w:Token>t</w:Token></w:Security>"
        )]
    );
    assert_eq!(body.as_deref(), Some(&b"<q:Get>IBM</q:Get>"[..]));
}

#[test]
fn a_whole_envelope_request_decodes() {
    let r = CallRequest::decode(read("request_whole.bin")).unwrap();
    assert_eq!((r.id, r.attempt, r.soap), (7, 0, SoapVersion::V11));
    assert_eq!(r.heartbeat_ms, 0);
    assert_eq!(r.direction, Direction::Response);
    assert_eq!(r.trace.as_deref(), Some("00-abc-def-01"));
    assert!(matches!(&r.payload, Payload::Whole(b) if b.starts_with(b"<s:Envelope")));
}

#[test]
fn answers_decode_to_what_the_python_encoder_wrote() {
    let a = Answer::decode(read("answer_continue.bin")).unwrap();
    assert_eq!(
        a.timing,
        WorkerTiming {
            handler_us: 1234,
            worker_us: 1500
        }
    );
    let RemoteVerdict::Continue(patch) = a.verdict else {
        panic!("expected Continue")
    };
    let q = |l: &str| QName::new("urn:t", l);
    assert_eq!(
        patch.operations(),
        [
            PatchOp::AddHeader(
                q("A"),
                Bytes::from_static(b"<t:A xmlns:t=\"urn:t\">1</t:A>")
            ),
            PatchOp::ReplaceHeader(q("B"), Bytes::from_static(b"<t:B xmlns:t=\"urn:t\"/>")),
            PatchOp::RemoveHeader(q("C")),
            PatchOp::ReplaceBody(Bytes::from_static(b"<x/>")),
        ]
    );
    let a = Answer::decode(read("answer_respond.bin")).unwrap();
    assert_eq!(a.id, 9);
    assert_eq!(a.timing.worker_us, 7);
    assert!(matches!(a.verdict, RemoteVerdict::Respond(b) if b.ends_with(b"</e:Envelope>")));
    let a = Answer::decode(read("answer_fault.bin")).unwrap();
    assert_eq!(a.timing.handler_us, u32::MAX);
    let RemoteVerdict::Fault(f) = a.verdict else {
        panic!("expected Fault")
    };
    assert_eq!(f.kind(), FaultKind::HandlerFailed);
    assert_eq!(f.reason(), "handler auth failed: boom");
    assert_eq!(
        f.problem_header_name(),
        Some(&QName::new("http://www.w3.org/2005/08/addressing", "To"))
    );
    assert_eq!(f.relates_to_id(), Some("urn:uuid:1"));
}

#[test]
fn progress_frames_decode_to_what_the_python_encoder_wrote() {
    let ack = Progress {
        id: 0x0123456789ABCDEF0011223344556677,
        kind: ProgressKind::Ack,
    };
    assert_eq!(Progress::decode(read("ack.bin")), Ok(ack));
    assert_eq!(Reply::decode(read("ack.bin")), Ok(Reply::Progress(ack)));
    let beat = Progress {
        id: 5,
        kind: ProgressKind::Heartbeat,
    };
    assert_eq!(Progress::decode(read("heartbeat.bin")), Ok(beat));
    assert!(matches!(
        Reply::decode(read("answer_respond.bin")),
        Ok(Reply::Answer(a)) if a.id == 9
    ));
    assert_eq!(
        Reply::decode(read("request_whole.bin")),
        Err(FrameError::WrongKind(1))
    );
}

#[test]
fn refused_vectors_name_the_field() {
    assert_eq!(
        CallRequest::decode(read("bad_count.bin")),
        Err(FrameError::Truncated("namespace list"))
    );
    assert!(matches!(
        Answer::decode(read("truncated_answer.bin")),
        Err(FrameError::Truncated(_))
    ));
}

#[test]
fn the_whole_corpus_replays_and_frames_encode_back_byte_for_byte() {
    let mut files = 0;
    for entry in std::fs::read_dir(corpus()).unwrap() {
        let bytes = Bytes::from(std::fs::read(entry.unwrap().path()).unwrap());
        files += 1;
        if let Ok(r) = CallRequest::decode(bytes.clone()) {
            assert_eq!(r.encode().unwrap(), bytes);
        }
        if let Ok(a) = Answer::decode(bytes.clone()) {
            assert_eq!(a.encode().unwrap(), bytes);
        }
        if let Ok(p) = Progress::decode(bytes.clone()) {
            assert_eq!(p.encode(), bytes);
        }
    }
    assert!(files >= 9, "corpus has {files} files");
}
