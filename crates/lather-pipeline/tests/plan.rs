//! Plans are checked when built: clashing stages, writing oneway handlers and retried
//! stateful handlers are refused with messages that name the handlers.

use crate::support;

use lather_pipeline::{Options, Order, Plan, PlanError};
use support::*;

#[test]
fn handlers_writing_the_same_part_cannot_share_a_stage() {
    let err = Plan::new(vec![vec![
        step("a", Stamp("X", "1"), Options::default()),
        step("b", Stamp("X", "2"), Options::default()),
    ]])
    .unwrap_err();
    assert!(matches!(err, PlanError::Clash { stage: 0, .. }));
    assert_eq!(
        err.to_string(),
        "stage 1: a and b cannot run together: both write header {urn:test}X"
    );
}

#[test]
fn a_handler_reading_what_another_writes_cannot_share_its_stage() {
    let err = Plan::new(vec![
        vec![step("ok", Stamp("Y", "1"), Options::default())],
        vec![
            step("reader", Requires("X"), Options::default()),
            step("writer", Stamp("X", "1"), Options::default()),
        ],
    ])
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "stage 2: reader and writer cannot run together: reader reads header {urn:test}X, which writer writes"
    );
    // In separate stages the same pair is fine.
    Plan::new(vec![
        vec![step("writer", Stamp("X", "1"), Options::default())],
        vec![step("reader", Requires("X"), Options::default())],
    ])
    .unwrap();
}

#[test]
fn oneway_handlers_may_not_write_and_stateful_ones_may_not_be_retried() {
    let oneway = Options {
        oneway: true,
        ..Options::default()
    };
    let err = Plan::new(vec![vec![step("w", Stamp("X", "1"), oneway)]]).unwrap_err();
    assert_eq!(
        err,
        PlanError::OnewayWrites {
            handler: "w".into()
        }
    );
    let stateful = Options {
        stateless: false,
        retries: 2,
        ..Options::default()
    };
    let err = Plan::new(vec![vec![step("s", Refuse, stateful)]]).unwrap_err();
    assert_eq!(
        err,
        PlanError::RetriesOnStateful {
            handler: "s".into()
        }
    );
    assert_eq!(
        Plan::new(vec![vec![]]).unwrap_err(),
        PlanError::EmptyStage { stage: 0 }
    );
}

#[test]
fn a_plan_prints_its_stages() {
    let p = Plan::new(vec![
        vec![
            step(
                "log",
                Refuse,
                Options {
                    oneway: true,
                    ..Options::default()
                },
            ),
            step(
                "a",
                Stamp("A", "1"),
                Options {
                    must_perform: false,
                    ..Options::default()
                },
            ),
        ],
        vec![step("b", Stamp("B", "1"), Options::default())],
    ])
    .unwrap();
    assert_eq!(p.to_string(), "1: log (oneway) ‖ a (may fail)\n2: b\n");
}

#[test]
fn a_plan_understands_the_headers_its_handlers_name() {
    let p = Plan::new(vec![
        vec![step("r", Requires("X"), Options::default())],
        vec![step("w", Stamp("Y", "1"), Options::default())],
    ])
    .unwrap();
    assert_eq!(p.understood_headers(), [q("X"), q("Y")]);
}

fn names(plan: &Plan) -> Vec<Vec<String>> {
    plan.stages()
        .iter()
        .map(|s| s.iter().map(|step| step.name().to_owned()).collect())
        .collect()
}

#[test]
fn auto_puts_independent_handlers_in_one_stage() {
    let o = Options::default();
    let plan = Plan::auto(
        vec![
            step("a", Requires("X"), o.clone()),
            step("b", Requires("Y"), o.clone()),
            step("c", Stamp("Z", "z"), o.clone()),
        ],
        &[],
    )
    .unwrap();
    assert_eq!(names(&plan), vec![vec!["a", "b", "c"]]);
}

#[test]
fn auto_orders_clashing_handlers_by_their_listing() {
    let o = Options::default();
    // w writes X, r reads X, s writes Y (free): w first, r after it, s beside w.
    let plan = Plan::auto(
        vec![
            step("w", Stamp("X", "1"), o.clone()),
            step("r", Requires("X"), o.clone()),
            step("s", Stamp("Y", "2"), o.clone()),
        ],
        &[],
    )
    .unwrap();
    assert_eq!(names(&plan), vec![vec!["w", "s"], vec!["r"]]);
}

#[test]
fn auto_follows_explicit_after_orders_over_listing() {
    let o = Options::default();
    let steps = vec![
        step("w", Stamp("X", "1"), o.clone()),
        step("r", Requires("X"), o.clone()),
        step("free", Requires("Y"), o.clone()),
    ];
    // r must run before w (reversing the listing), free after r.
    let orders = [
        Order {
            before: 1,
            after: 0,
        },
        Order {
            before: 1,
            after: 2,
        },
    ];
    let plan = Plan::auto(steps, &orders).unwrap();
    assert_eq!(names(&plan), vec![vec!["r"], vec!["w", "free"]]);
}

#[test]
fn auto_refuses_a_cycle_naming_its_handlers() {
    let o = Options::default();
    let steps = vec![
        step("a", Requires("X"), o.clone()),
        step("b", Requires("Y"), o.clone()),
    ];
    let orders = [
        Order {
            before: 0,
            after: 1,
        },
        Order {
            before: 1,
            after: 0,
        },
    ];
    let err = Plan::auto(steps, &orders).unwrap_err();
    assert_eq!(
        err,
        PlanError::Cycle {
            handlers: vec!["a".into(), "b".into()]
        }
    );
    assert!(err.to_string().contains("cycle among a, b"), "{err}");
}

#[test]
fn a_snapshot_reader_may_share_a_stage_with_the_writer_of_what_it_reads() {
    let observer = Options {
        snapshot: true,
        ..Options::default()
    };
    let plan = Plan::new(vec![vec![
        step("writer", Stamp("X", "1"), Options::default()),
        step("observer", Requires("X"), observer.clone()),
    ]]);
    assert!(plan.is_ok(), "{plan:?}");
    // Without the flag the same stage is refused; and snapshot never excuses two writers.
    let refused = Plan::new(vec![vec![
        step("writer", Stamp("X", "1"), Options::default()),
        step("reader", Requires("X"), Options::default()),
    ]]);
    assert!(matches!(refused, Err(PlanError::Clash { .. })));
    let writers = Plan::new(vec![vec![
        step("a", Stamp("X", "1"), observer.clone()),
        step("b", Stamp("X", "2"), observer.clone()),
    ]]);
    assert!(matches!(writers, Err(PlanError::Clash { .. })));
    // auto plans the observer beside the writer.
    let plan = Plan::auto(
        vec![
            step("writer", Stamp("X", "1"), Options::default()),
            step("observer", Requires("X"), observer),
        ],
        &[],
    )
    .unwrap();
    assert_eq!(names(&plan), vec![vec!["writer", "observer"]]);
}

#[tokio::test]
async fn a_snapshot_reader_sees_the_message_as_its_stage_received_it() {
    let observer = Options {
        snapshot: true,
        ..Options::default()
    };
    // The message has no X; the writer adds it, the observer beside it must not see it.
    let plan = Plan::new(vec![vec![
        step("writer", Stamp("X", "1"), Options::default()),
        step("observer", Requires("X"), observer),
    ]])
    .unwrap();
    let outcome = lather_pipeline::run(&plan, message(), &lather_envelope::Limits::default()).await;
    assert!(
        matches!(outcome, lather_pipeline::Outcome::Fault(ref f) if f.reason().contains("X missing")),
        "{outcome:?}"
    );
}
