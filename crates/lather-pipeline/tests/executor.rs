//! The stage executor: merging, concurrency, and each failure flag.

use crate::support;

use lather_envelope::{FaultKind, Limits};
use lather_pipeline::{Options, Outcome, Plan, Step, run};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;
use support::*;

fn limits() -> Limits {
    Limits::default()
}

fn continued(outcome: Outcome) -> lather_pipeline::Message {
    match outcome {
        Outcome::Continue(m) => m,
        other => panic!("expected Continue, got {other:?}"),
    }
}

fn faulted(outcome: Outcome) -> lather_envelope::Fault {
    match outcome {
        Outcome::Fault(f) => f,
        other => panic!("expected Fault, got {other:?}"),
    }
}

#[tokio::test]
async fn patches_of_one_stage_merge_and_the_next_stage_sees_them() {
    let p = plan(vec![
        vec![
            step("a", Stamp("A", "1"), Options::default()),
            step("b", Stamp("B", "2"), Options::default()),
        ],
        vec![
            step("needs-a", Requires("A"), Options::default()),
            step("needs-b", Requires("B"), Options::default()),
        ],
    ]);
    let out = continued(run(&p, message(), &limits()).await);
    let env = out.envelope();
    let names: Vec<_> = env
        .headers()
        .iter()
        .map(|h| h.name().local().to_owned())
        .collect();
    assert_eq!(names, ["A", "B"]);
    assert_eq!(
        env.header_text(env.header(&q("B")).unwrap()).as_deref(),
        Some("2")
    );
    assert_eq!(out.context().id, 7);
}

#[tokio::test]
async fn replacing_a_header_keeps_one_block() {
    let p = plan(vec![
        vec![step("a", Stamp("A", "1"), Options::default())],
        vec![step("a2", Stamp("A", "2"), Options::default())],
    ]);
    let out = continued(run(&p, message(), &limits()).await);
    assert_eq!(out.envelope().headers().len(), 1);
    let block = out.envelope().header(&q("A")).unwrap();
    assert_eq!(out.envelope().header_text(block).as_deref(), Some("2"));
}

#[tokio::test]
async fn handlers_of_a_stage_run_concurrently() {
    let barrier = Arc::new(tokio::sync::Barrier::new(3));
    let p = plan(vec![vec![
        step("m1", Meet(barrier.clone()), Options::default()),
        step("m2", Meet(barrier.clone()), Options::default()),
        step(
            "m3",
            Meet(barrier),
            Options {
                work: lather_pipeline::Work::Cpu,
                ..Options::default()
            },
        ),
    ]]);
    let finished =
        tokio::time::timeout(Duration::from_secs(10), run(&p, message(), &limits())).await;
    continued(finished.expect("the three handlers never met: they did not run concurrently"));
}

#[tokio::test]
async fn a_must_perform_failure_halts_the_message() {
    let later = step("later", Stamp("L", "x"), Options::default());
    let p = plan(vec![
        vec![step("refuse", Refuse, Options::default())],
        vec![later.clone()],
    ]);
    let fault = faulted(run(&p, message(), &limits()).await);
    assert_eq!(fault.reason(), "refused");
    assert_eq!(
        later.counters().calls.load(Ordering::SeqCst),
        0,
        "a later stage ran"
    );
}

/// The cancellation rule of the `Handler` docs: a stage-mate's fault does not cancel the
/// others; the engine waits for the whole stage, then halts before the next one.
#[tokio::test]
async fn a_fault_waits_for_its_stage_mates_and_stops_the_later_stages() {
    let go = Arc::new(tokio::sync::Semaphore::new(0));
    let done = Arc::new(AtomicU32::new(0));
    let mate = WaitThen {
        go: go.clone(),
        fault: false,
        done: done.clone(),
    };
    let later = step("later", Stamp("L", "x"), Options::default());
    let p = Arc::new(plan(vec![
        vec![
            step("refuse", Refuse, Options::default()),
            step("mate", mate, Options::default()),
        ],
        vec![later.clone()],
    ]));
    let running = tokio::spawn({
        let p = p.clone();
        async move { run(&p, message(), &limits()).await }
    });
    // On this single-threaded runtime the run is polled here: Refuse faults at once while
    // its mate waits for a permit. An engine that cancelled the mate would finish now.
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    assert!(
        !running.is_finished(),
        "the run did not wait for the stage-mate"
    );
    go.add_permits(1);
    let fault = faulted(
        tokio::time::timeout(Duration::from_secs(10), running)
            .await
            .expect("the run ends once the mate has its permit")
            .expect("the run task"),
    );
    assert_eq!(fault.reason(), "refused");
    assert_eq!(
        done.load(Ordering::SeqCst),
        1,
        "the stage-mate was cancelled"
    );
    assert_eq!(
        later.counters().calls.load(Ordering::SeqCst),
        0,
        "a later stage ran"
    );
}

#[tokio::test]
async fn a_failure_that_need_not_be_performed_is_counted_and_ignored() {
    let refuse = step(
        "refuse",
        Refuse,
        Options {
            must_perform: false,
            ..Options::default()
        },
    );
    let p = plan(vec![vec![
        refuse.clone(),
        step("a", Stamp("A", "1"), Options::default()),
    ]]);
    let out = continued(run(&p, message(), &limits()).await);
    assert!(out.envelope().header(&q("A")).is_some());
    assert_eq!(refuse.counters().ignored_failures.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn oneway_handlers_are_not_waited_for_and_their_failures_count() {
    let go = Arc::new(tokio::sync::Semaphore::new(0));
    let done = Arc::new(AtomicU32::new(0));
    let oneway = Options {
        oneway: true,
        ..Options::default()
    };
    let ok = step(
        "audit",
        WaitThen {
            go: go.clone(),
            fault: false,
            done: done.clone(),
        },
        oneway.clone(),
    );
    let bad = step(
        "notify",
        WaitThen {
            go: go.clone(),
            fault: true,
            done: done.clone(),
        },
        oneway,
    );
    let p = plan(vec![vec![
        ok.clone(),
        bad.clone(),
        step("a", Stamp("A", "1"), Options::default()),
    ]]);
    // The oneway handlers wait for permits, which are only given after the message is done.
    continued(run(&p, message(), &limits()).await);
    assert_eq!(done.load(Ordering::SeqCst), 0);
    go.add_permits(2);
    for _ in 0..200 {
        if done.load(Ordering::SeqCst) == 2
            && bad.counters().oneway_failures.load(Ordering::SeqCst) == 1
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(done.load(Ordering::SeqCst), 2);
    assert_eq!(bad.counters().oneway_failures.load(Ordering::SeqCst), 1);
    assert_eq!(ok.counters().oneway_failures.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_panicking_handler_becomes_a_fault_and_stateless_ones_are_retried() {
    let calls = Arc::new(AtomicU32::new(0));
    let once = step("flaky", Flaky::new(1, calls.clone()), Options::default());
    let fault = faulted(run(&plan(vec![vec![once]]), message(), &limits()).await);
    assert_eq!(fault.kind(), FaultKind::HandlerFailed);
    assert!(
        fault.reason().contains("flaky") && fault.reason().contains("panics left"),
        "{}",
        fault.reason()
    );

    let calls = Arc::new(AtomicU32::new(0));
    let retried = step(
        "flaky",
        Flaky::new(2, calls.clone()),
        Options {
            retries: 2,
            retry_backoff: Duration::from_millis(1),
            ..Options::default()
        },
    );
    continued(run(&plan(vec![vec![retried.clone()]]), message(), &limits()).await);
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    assert_eq!(retried.counters().retries.load(Ordering::SeqCst), 2);
    assert_eq!(retried.counters().panics.load(Ordering::SeqCst), 2);
}

#[tokio::test(start_paused = true)]
async fn a_slow_handler_times_out() {
    let slow = step(
        "slow",
        Sleep(Duration::from_secs(5)),
        Options {
            timeout: Duration::from_millis(100),
            ..Options::default()
        },
    );
    let fault = faulted(run(&plan(vec![vec![slow.clone()]]), message(), &limits()).await);
    assert_eq!(fault.kind(), FaultKind::HandlerTimeout);
    assert!(fault.reason().contains("100 ms"), "{}", fault.reason());
    assert_eq!(slow.counters().timeouts.load(Ordering::SeqCst), 1);

    let retried = step(
        "slow",
        Sleep(Duration::from_secs(5)),
        Options {
            timeout: Duration::from_millis(100),
            retries: 3,
            ..Options::default()
        },
    );
    faulted(run(&plan(vec![vec![retried.clone()]]), message(), &limits()).await);
    assert_eq!(retried.counters().timeouts.load(Ordering::SeqCst), 4);
}

#[tokio::test]
async fn a_handler_may_answer_and_stop_the_flow() {
    let later = step("later", Stamp("L", "x"), Options::default());
    let p = plan(vec![
        vec![step("cache", Answer, Options::default())],
        vec![later.clone()],
    ]);
    match run(&p, message(), &limits()).await {
        Outcome::Respond(env) => assert_eq!(env.operation().unwrap().local(), "cached"),
        other => panic!("{other:?}"),
    }
    assert_eq!(later.counters().calls.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_patch_outside_the_declared_access_is_refused() {
    let fault = faulted(
        run(
            &plan(vec![vec![step("liar", Liar, Options::default())]]),
            message(),
            &limits(),
        )
        .await,
    );
    assert_eq!(fault.kind(), FaultKind::HandlerFailed);
    assert!(
        fault.reason().contains("liar wrote the Body"),
        "{}",
        fault.reason()
    );
}

/// Records the name of the thread each call ran on, after spinning for `spin`.
struct WhereAmI {
    spin: std::time::Duration,
    seen: std::sync::Mutex<Vec<Option<String>>>,
}

impl lather_pipeline::Handler for WhereAmI {
    fn access(&self) -> lather_pipeline::Access {
        lather_pipeline::Access::read_only(lather_pipeline::Parts::none())
    }
    fn call<'a>(&'a self, _: &'a lather_pipeline::Message) -> lather_pipeline::HandlerFuture<'a> {
        Box::pin(async move {
            let start = std::time::Instant::now();
            while start.elapsed() < self.spin {
                std::hint::spin_loop();
            }
            let name = std::thread::current().name().map(str::to_owned);
            self.seen.lock().unwrap().push(name);
            lather_pipeline::Verdict::proceed()
        })
    }
}

#[tokio::test]
async fn cpu_handlers_go_to_the_pool_unless_measured_cheaper_than_the_hand_off() {
    let cpu = Options {
        work: lather_pipeline::Work::Cpu,
        ..Options::default()
    };
    let cheap = Arc::new(WhereAmI {
        spin: std::time::Duration::ZERO,
        seen: Default::default(),
    });
    let dear = Arc::new(WhereAmI {
        spin: std::time::Duration::from_millis(1),
        seen: Default::default(),
    });
    let plan = Plan::new(vec![vec![
        Arc::new(Step::new("cheap", cheap.clone(), cpu.clone())),
        Arc::new(Step::new("dear", dear.clone(), cpu)),
    ]])
    .unwrap();
    let on_pool = |seen: &[Option<String>]| -> Vec<bool> {
        seen.iter()
            .map(|n| n.as_deref() == Some("lather-cpu"))
            .collect()
    };
    // Unknown cost: the first call goes to the pool; once measured cheap, the cheap one
    // stays inline. On a loaded machine a call may be descheduled and measured slow: the
    // moving average then sends the handler back to the pool until later calls bring it
    // down again. So calls go on until the last five stayed inline, within a bound.
    const INLINE_RUN: usize = 5;
    const MAX_CALLS: usize = 400;
    let mut calls = 0;
    while calls < MAX_CALLS {
        assert!(matches!(
            run(&plan, message(), &Limits::default()).await,
            Outcome::Continue(_)
        ));
        calls += 1;
        let seen = on_pool(&cheap.seen.lock().unwrap());
        if calls > INLINE_RUN && seen[calls - INLINE_RUN..].iter().all(|pool| !pool) {
            break;
        }
    }
    let cheap_seen = on_pool(&cheap.seen.lock().unwrap());
    assert!(cheap_seen[0], "{cheap_seen:?}");
    assert!(
        cheap_seen[calls - INLINE_RUN..].iter().all(|pool| !pool),
        "the cheap handler never stayed inline for {INLINE_RUN} calls in {calls}: {cheap_seen:?}"
    );
    assert_eq!(on_pool(&dear.seen.lock().unwrap()), vec![true; calls]);
}

/// Adds header block `{urn:test}A` as an edit it made itself: `Edit::add_header` of
/// `block`, or (`as_body`) an edit of the Body with the same bytes.
struct CheckedAdd {
    block: &'static str,
    as_body: bool,
}

impl lather_pipeline::Handler for CheckedAdd {
    fn access(&self) -> lather_pipeline::Access {
        lather_pipeline::Access {
            reads: lather_pipeline::Parts::none(),
            writes: lather_pipeline::Parts::none().header(q("A")),
        }
    }
    fn call<'a>(&'a self, _: &'a lather_pipeline::Message) -> lather_pipeline::HandlerFuture<'a> {
        Box::pin(async move {
            let bytes = lather_envelope::Bytes::from_static(self.block.as_bytes());
            let edit = if self.as_body {
                lather_envelope::Edit::replace_body(bytes)
            } else {
                lather_envelope::Edit::add_header(bytes)
            };
            let patch = lather_pipeline::Patch::new().add_checked_header(q("A"), edit.unwrap());
            lather_pipeline::Verdict::Continue(patch)
        })
    }
}

#[tokio::test]
async fn a_header_the_handler_checked_is_applied_as_it_is_and_anything_else_is_checked() {
    let block = r#"<t:A xmlns:t="urn:test">checked</t:A>"#;
    let checked = CheckedAdd {
        block,
        as_body: false,
    };
    let out = continued(
        run(
            &plan(vec![vec![step("checked", checked, Options::default())]]),
            message(),
            &limits(),
        )
        .await,
    );
    let env = out.envelope();
    let added = env.header(&q("A")).expect("the checked block was added");
    assert_eq!(env.header_text(added).as_deref(), Some("checked"));
    assert_eq!(env.headers().len(), 1);
    // Two elements are Body content, not a header block: given as a checked header, the
    // bytes are checked as one when the patch is applied, and refused.
    let not_a_block = CheckedAdd {
        block: r#"<t:A xmlns:t="urn:test"/><t:A xmlns:t="urn:test"/>"#,
        as_body: true,
    };
    let fault = faulted(
        run(
            &plan(vec![vec![step("two", not_a_block, Options::default())]]),
            message(),
            &limits(),
        )
        .await,
    );
    assert_eq!(fault.kind(), FaultKind::HandlerFailed);
    assert!(
        fault.reason().contains("two returned an invalid patch"),
        "{}",
        fault.reason()
    );
}
