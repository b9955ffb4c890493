//! Message-context properties in answer frames: the authenticated identity travels back to
//! the serving process; any other property is refused, and the worker answers with a
//! `HandlerFailed` fault saying why.

use bytes::Bytes;
use lather_envelope::{Envelope, EnvelopeBuilder, FaultKind, Limits, SoapVersion};
use lather_pipeline::{
    Access, Context, Handler, HandlerFuture, Identity, Message, Options, Patch, Verdict,
};
use lather_remote::frame::{Answer, FrameError, RemoteVerdict, WorkerTiming};
use lather_remote::request_for;
use lather_remote::worker::{Hosted, answer};
use std::sync::Arc;

#[test]
fn an_identity_round_trips_beside_the_other_operations() {
    let patch = Patch::new()
        .set_property(Identity("alice".into()))
        .replace_body(Bytes::from_static(b"<x/>"));
    let a = Answer {
        id: 7,
        timing: WorkerTiming::default(),
        verdict: RemoteVerdict::Continue(patch.clone()),
    };
    let decoded = Answer::decode(a.encode().unwrap()).unwrap();
    assert_eq!(decoded, a);
    let RemoteVerdict::Continue(back) = decoded.verdict else {
        panic!("not a patch")
    };
    let identity = back.properties().find_map(|p| p.get::<Identity>().cloned());
    assert_eq!(identity, Some(Identity("alice".into())));
}

/// A property type of some handler author's own.
#[derive(Debug, Clone, PartialEq)]
struct Tenant(u32);

#[test]
fn another_property_type_is_refused_when_encoding() {
    let a = Answer {
        id: 7,
        timing: WorkerTiming::default(),
        verdict: RemoteVerdict::Continue(Patch::new().set_property(Tenant(3))),
    };
    assert_eq!(a.encode(), Err(FrameError::UnshippableProperty));
}

/// Sets a [`Tenant`], which no frame carries.
#[derive(Debug)]
struct SetsTenant;

impl Handler for SetsTenant {
    fn access(&self) -> Access {
        Access::default()
    }

    fn call<'a>(&'a self, _message: &'a Message) -> HandlerFuture<'a> {
        Box::pin(async { Verdict::Continue(Patch::new().set_property(Tenant(3))) })
    }
}

#[tokio::test]
async fn a_worker_whose_handler_sets_another_property_answers_handler_failed() {
    let hosted = Hosted {
        name: "tenant".into(),
        handler: Arc::new(SetsTenant),
        options: Options::default(),
    };
    let bytes = EnvelopeBuilder::new(SoapVersion::V12)
        .body("<m:op xmlns:m=\"urn:m\"/>".into())
        .build();
    let message = Message::new(
        Envelope::parse(bytes, &Limits::default()).unwrap(),
        Context::default(),
    );
    let frame = request_for("tenant", &Access::default(), &message, 0, u64::MAX)
        .encode()
        .unwrap();
    let reply = Answer::decode(answer(&hosted, frame, &Limits::default()).await).unwrap();
    let RemoteVerdict::Fault(fault) = reply.verdict else {
        panic!("{:?}", reply.verdict)
    };
    assert_eq!(fault.kind(), FaultKind::HandlerFailed);
    assert!(
        fault.reason().contains("property other than the identity"),
        "{}",
        fault.reason()
    );
}
