//! Orchestration overhead: what running a message through stages costs beyond the handlers'
//! own work. Handlers here (the crate's doubles) do nothing or set one header, so the time
//! is the engine's.

use criterion::{Criterion, criterion_group, criterion_main};
use lather_envelope::{Envelope, EnvelopeBuilder, Limits, SoapVersion};
use lather_pipeline::doubles::{Nop, Stamp};
use lather_pipeline::{Context, Handler, Message, Options, Plan, Step, run};
use std::hint::black_box;
use std::sync::Arc;

fn message() -> Message {
    let item = r#"<m:item id="1" kind="a">text &amp; more</m:item>"#;
    let body = format!(r#"<m:op xmlns:m="urn:m">{}</m:op>"#, item.repeat(20));
    let bytes = EnvelopeBuilder::new(SoapVersion::V12)
        .body(body.into())
        .build();
    Message::new(
        Envelope::parse(bytes, &Limits::default()).unwrap(),
        Context {
            id: 1,
            service: "b".into(),
            action: None,
            client: None,
            ..Default::default()
        },
    )
}

fn plan(stages: usize, per_stage: usize, make: impl Fn(usize) -> Arc<dyn Handler>) -> Plan {
    let stages = (0..stages)
        .map(|s| {
            (0..per_stage)
                .map(|h| {
                    Arc::new(Step::new(
                        format!("s{s}h{h}"),
                        make(s * per_stage + h),
                        Options::default(),
                    ))
                })
                .collect()
        })
        .collect();
    Plan::new(stages).unwrap()
}

const NAMES: [&str; 10] = ["A", "B", "C", "D", "E", "F", "G", "H", "I", "J"];

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let limits = Limits::default();
    let msg = message();
    let cases: Vec<(&str, Plan)> = vec![
        ("empty plan", Plan::default()),
        ("1 stage x 1 nop", plan(1, 1, |_| Arc::new(Nop))),
        ("5 stages x 1 nop", plan(5, 1, |_| Arc::new(Nop))),
        ("1 stage x 5 nop", plan(1, 5, |_| Arc::new(Nop))),
        (
            "1 stage x 1 patch",
            plan(1, 1, |i| Arc::new(Stamp(NAMES[i], "1"))),
        ),
        (
            "5 stages x 1 patch",
            plan(5, 1, |i| Arc::new(Stamp(NAMES[i], "1"))),
        ),
        (
            "1 stage x 5 patch",
            plan(1, 5, |i| Arc::new(Stamp(NAMES[i], "1"))),
        ),
    ];
    let mut group = c.benchmark_group("orchestration");
    for (name, p) in &cases {
        group.bench_function(*name, |b| {
            b.iter(|| rt.block_on(run(black_box(p), msg.clone(), &limits)))
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
