//! What the executor tests share: a message, steps and plans, and the handler doubles of
//! `lather_pipeline::doubles` (feature `test-util`) under the names the tests use.

#![allow(
    dead_code,
    unused_imports,
    unreachable_pub,
    reason = "each test file uses its own part of the support"
)]

use lather_envelope::{Envelope, EnvelopeBuilder, Limits, SoapVersion};
pub use lather_pipeline::doubles::{
    Flaky, Liar, Meet, NS, Pause as Sleep, Refuse, Requires, RespondEarly as Answer, Stamp,
    WaitThen, name as q,
};
use lather_pipeline::{Context, Handler, Message, Options, Plan, Step};
use std::sync::Arc;

pub fn message() -> Message {
    let bytes = EnvelopeBuilder::new(SoapVersion::V12)
        .body("<m:op xmlns:m=\"urn:m\">x</m:op>".into())
        .build();
    let envelope = Envelope::parse(bytes, &Limits::default()).unwrap();
    Message::new(
        envelope,
        Context {
            id: 7,
            service: "svc".into(),
            action: None,
            client: None,
            ..Default::default()
        },
    )
}

pub fn step(name: &str, handler: impl Handler, options: Options) -> Arc<Step> {
    Arc::new(Step::new(name, Arc::new(handler), options))
}

pub fn plan(stages: Vec<Vec<Arc<Step>>>) -> Plan {
    Plan::new(stages).expect("valid plan")
}
