//! What a host running one handler for someone else relies on: `Step::perform`, the
//! attempt number a handler sees, and a patch's operations listed in order.

use crate::support;

use bytes::Bytes;
use lather_envelope::FaultKind;
use lather_pipeline::{
    Access, Handler, HandlerFuture, Message, Options, Parts, Patch, PatchOp, Step, Verdict,
    current_attempt,
};
use std::sync::Arc;
use std::sync::Mutex;
use std::time::Duration;
use support::*;

/// Records the attempt number of each call and panics on the first `panics` ones; with
/// an `inner` step, performs it first, on every call.
struct Attempts {
    inner: Option<Step>,
    seen: Arc<Mutex<Vec<u32>>>,
    panics: u32,
}

impl Handler for Attempts {
    fn access(&self) -> Access {
        Access::read_only(Parts::none())
    }

    fn call<'a>(&'a self, message: &'a Message) -> HandlerFuture<'a> {
        Box::pin(async move {
            let attempt = current_attempt();
            if let Some(inner) = &self.inner {
                inner.perform(message).await;
            }
            self.seen.lock().unwrap().push(attempt);
            assert!(attempt >= self.panics, "failing attempt {attempt}");
            Verdict::proceed()
        })
    }
}

#[tokio::test]
async fn perform_retries_and_hands_the_attempt_number_to_the_handler() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let options = Options {
        retries: 2,
        retry_backoff: Duration::from_millis(1),
        ..Options::default()
    };
    let handler = Attempts {
        inner: None,
        seen: seen.clone(),
        panics: 2,
    };
    let step = Step::new("count", Arc::new(handler), options);
    assert!(matches!(step.perform(&message()).await, Verdict::Continue(p) if p.is_empty()));
    assert_eq!(*seen.lock().unwrap(), [0, 1, 2]);
    assert_eq!(current_attempt(), 0, "outside the engine");
}

#[tokio::test]
async fn a_step_performed_inside_a_retry_sees_its_own_first_attempt() {
    // The outer step's second attempt performs the inner step, whose first attempt must
    // read 0, not the outer step's 1.
    let inner_seen = Arc::new(Mutex::new(Vec::new()));
    let inner = Step::new(
        "inner",
        Arc::new(Attempts {
            inner: None,
            seen: inner_seen.clone(),
            panics: 0,
        }),
        Options::default(),
    );
    let outer_seen = Arc::new(Mutex::new(Vec::new()));
    let outer = Step::new(
        "outer",
        Arc::new(Attempts {
            inner: Some(inner),
            seen: outer_seen.clone(),
            panics: 1,
        }),
        Options {
            retries: 1,
            retry_backoff: Duration::from_millis(1),
            ..Options::default()
        },
    );
    assert!(matches!(
        outer.perform(&message()).await,
        Verdict::Continue(_)
    ));
    assert_eq!(*outer_seen.lock().unwrap(), [0, 1]);
    assert_eq!(*inner_seen.lock().unwrap(), [0, 0]);
}

#[tokio::test]
async fn perform_turns_timeouts_and_panics_into_faults() {
    let slow = Step::new(
        "slow",
        Arc::new(Sleep(Duration::from_secs(5))),
        Options {
            timeout: Duration::from_millis(20),
            ..Options::default()
        },
    );
    match slow.perform(&message()).await {
        Verdict::Fault(f) => {
            assert_eq!(f.kind(), FaultKind::HandlerTimeout);
            assert!(f.reason().contains("slow"), "{}", f.reason());
        }
        other => panic!("expected a fault, got {other:?}"),
    }
    let seen = Arc::new(Mutex::new(Vec::new()));
    let broken = Step::new(
        "broken",
        Arc::new(Attempts {
            inner: None,
            seen,
            panics: 9,
        }),
        Options::default(),
    );
    match broken.perform(&message()).await {
        Verdict::Fault(f) => {
            assert_eq!(f.kind(), FaultKind::HandlerFailed);
            assert!(f.reason().contains("failing attempt 0"), "{}", f.reason());
        }
        other => panic!("expected a fault, got {other:?}"),
    }
}

#[test]
fn a_patch_lists_its_operations_and_rebuilds_from_them() {
    let patch = Patch::new()
        .add_header(q("A"), "<a/>")
        .replace_header(q("B"), "<b/>")
        .remove_header(q("C"))
        .replace_body("<x/>");
    let ops = patch.operations();
    assert_eq!(
        ops,
        [
            PatchOp::AddHeader(q("A"), Bytes::from_static(b"<a/>")),
            PatchOp::ReplaceHeader(q("B"), Bytes::from_static(b"<b/>")),
            PatchOp::RemoveHeader(q("C")),
            PatchOp::ReplaceBody(Bytes::from_static(b"<x/>")),
        ]
    );
    let rebuilt = ops.iter().cloned().fold(Patch::new(), Patch::with);
    assert_eq!(rebuilt, patch);
}

#[test]
fn a_checked_header_is_listed_as_an_added_header_and_equals_the_plain_patch() {
    let edit = lather_envelope::Edit::add_header(Bytes::from_static(b"<a/>")).unwrap();
    let checked = Patch::new().add_checked_header(q("A"), edit);
    assert_eq!(
        checked.operations(),
        [PatchOp::AddHeader(q("A"), Bytes::from_static(b"<a/>"))]
    );
    assert_eq!(checked, Patch::new().add_header(q("A"), "<a/>"));
    let removal = Patch::new().add_checked_header(q("A"), lather_envelope::Edit::remove_header(0));
    assert_eq!(
        removal.operations(),
        [PatchOp::AddHeader(q("A"), Bytes::new())]
    );
}
