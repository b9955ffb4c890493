//! Small handlers with one behaviour each, for the executor tests.

#![allow(dead_code, unreachable_pub)]

use lather_envelope::{Envelope, EnvelopeBuilder, Fault, FaultKind, Limits, QName, SoapVersion};
use lather_pipeline::{
    Access, Context, Handler, HandlerFuture, Message, Options, Parts, Patch, Plan, Step, Verdict,
};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

pub const NS: &str = "urn:test";

pub fn q(local: &str) -> QName {
    QName::new(NS, local)
}

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

/// Writes header `name` with `text`.
pub struct Stamp(pub &'static str, pub &'static str);

impl Handler for Stamp {
    fn access(&self) -> Access {
        Access {
            reads: Parts::none(),
            writes: Parts::none().header(q(self.0)),
        }
    }
    fn call<'a>(&'a self, _: &'a Message) -> HandlerFuture<'a> {
        Box::pin(async move {
            let block = EnvelopeBuilder::text_element(NS, "t", self.0, self.1);
            Verdict::Continue(Patch::new().replace_header(q(self.0), block))
        })
    }
}

/// Faults unless header `name` is present; records nothing.
pub struct Requires(pub &'static str);

impl Handler for Requires {
    fn access(&self) -> Access {
        Access::read_only(Parts::none().header(q(self.0)))
    }
    fn call<'a>(&'a self, m: &'a Message) -> HandlerFuture<'a> {
        Box::pin(async move {
            if m.envelope().header(&q(self.0)).is_some() {
                Verdict::proceed()
            } else {
                Verdict::Fault(Fault::with_reason(
                    FaultKind::InvalidEnvelope,
                    format!("{} missing", self.0),
                ))
            }
        })
    }
}

/// Always faults.
pub struct Refuse;

impl Handler for Refuse {
    fn access(&self) -> Access {
        Access::default()
    }
    fn call<'a>(&'a self, _: &'a Message) -> HandlerFuture<'a> {
        Box::pin(async {
            Verdict::Fault(Fault::with_reason(FaultKind::InvalidEnvelope, "refused"))
        })
    }
}

/// Sleeps, then continues.
pub struct Sleep(pub Duration);

impl Handler for Sleep {
    fn access(&self) -> Access {
        Access::default()
    }
    fn call<'a>(&'a self, _: &'a Message) -> HandlerFuture<'a> {
        Box::pin(async move {
            tokio::time::sleep(self.0).await;
            Verdict::proceed()
        })
    }
}

/// Panics on its first `n` calls, then continues; counts calls.
pub struct Flaky {
    pub panics_left: AtomicU32,
    pub calls: Arc<AtomicU32>,
}

impl Flaky {
    pub fn new(n: u32, calls: Arc<AtomicU32>) -> Self {
        Flaky {
            panics_left: AtomicU32::new(n),
            calls,
        }
    }
}

impl Handler for Flaky {
    fn access(&self) -> Access {
        Access::default()
    }
    fn call<'a>(&'a self, _: &'a Message) -> HandlerFuture<'a> {
        Box::pin(async move {
            self.calls.fetch_add(1, Ordering::SeqCst);
            let left = self.panics_left.load(Ordering::SeqCst);
            if left > 0 {
                self.panics_left.store(left - 1, Ordering::SeqCst);
                panic!("flaky handler, {left} panics left");
            }
            Verdict::proceed()
        })
    }
}

/// Waits at a barrier shared with its stage-mates: finishes only if they run concurrently.
pub struct Meet(pub Arc<tokio::sync::Barrier>);

impl Handler for Meet {
    fn access(&self) -> Access {
        Access::default()
    }
    fn call<'a>(&'a self, _: &'a Message) -> HandlerFuture<'a> {
        Box::pin(async move {
            self.0.wait().await;
            Verdict::proceed()
        })
    }
}

/// Answers the requester itself.
pub struct Answer;

impl Handler for Answer {
    fn access(&self) -> Access {
        Access::default()
    }
    fn call<'a>(&'a self, _: &'a Message) -> HandlerFuture<'a> {
        Box::pin(async {
            let bytes = EnvelopeBuilder::new(SoapVersion::V12)
                .body("<cached/>".into())
                .build();
            Verdict::Respond(Box::new(
                Envelope::parse(bytes, &Limits::default()).unwrap(),
            ))
        })
    }
}

/// Declares no writes but replaces the Body.
pub struct Liar;

impl Handler for Liar {
    fn access(&self) -> Access {
        Access::read_only(Parts::none().body())
    }
    fn call<'a>(&'a self, _: &'a Message) -> HandlerFuture<'a> {
        Box::pin(async { Verdict::Continue(Patch::new().replace_body("<x/>")) })
    }
}

/// Waits for a permit from `go`, then continues (or faults).
pub struct WaitThen {
    pub go: Arc<tokio::sync::Semaphore>,
    pub fault: bool,
    pub done: Arc<AtomicU32>,
}

impl Handler for WaitThen {
    fn access(&self) -> Access {
        Access::read_only(Parts::none().body())
    }
    fn call<'a>(&'a self, _: &'a Message) -> HandlerFuture<'a> {
        Box::pin(async move {
            let _permit = self.go.acquire().await;
            self.done.fetch_add(1, Ordering::SeqCst);
            if self.fault {
                Verdict::Fault(Fault::new(FaultKind::Internal))
            } else {
                Verdict::proceed()
            }
        })
    }
}
