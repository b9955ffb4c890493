//! Throughput of the lazy envelope: parse, and parse + write with and without a header edit,
//! for SOAP 1.2 envelopes of about 1 KB, 16 KB and 1 MB (WS-Addressing headers, a Body of
//! repeated items with attributes, text and entity references); and what a subscriber does
//! with each small notification (parse, three header lookups, the event's fields).
//!
//! Run with `cargo bench -p lather-envelope --bench envelope`.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use lather_envelope::{Bytes, Edit, Element, Envelope, Limits, QName};
use std::hint::black_box;

/// A SOAP 1.2 request of at least `size` bytes.
fn message(size: usize) -> Bytes {
    let mut s = String::with_capacity(size + 512);
    s.push_str(concat!(
        r#"<?xml version="1.0" encoding="UTF-8"?>"#,
        "\n",
        r#"<env:Envelope xmlns:env="http://www.w3.org/2003/05/soap-envelope" "#,
        r#"xmlns:wsa="http://www.w3.org/2005/08/addressing">"#,
        "\n  <env:Header>\n",
        r#"    <wsa:Action env:mustUnderstand="true">urn:example:stock/GetQuotesResponse</wsa:Action>"#,
        "\n",
        "    <wsa:MessageID>urn:uuid:6b29fc40-ca47-1067-b31d-00dd010662da</wsa:MessageID>\n",
        "    <wsa:RelatesTo>urn:uuid:0f8fad5b-d9cb-469f-a165-70867728950e</wsa:RelatesTo>\n",
        "    <wsa:To>http://www.w3.org/2005/08/addressing/anonymous</wsa:To>\n",
        "    <wsa:ReplyTo><wsa:Address>http://www.w3.org/2005/08/addressing/anonymous</wsa:Address></wsa:ReplyTo>\n",
        "  </env:Header>\n  <env:Body>\n",
        r#"    <m:GetQuotesResponse xmlns:m="urn:example:stock">"#,
        "\n",
    ));
    let tail = "    </m:GetQuotesResponse>\n  </env:Body>\n</env:Envelope>\n";
    let mut i = 0;
    while s.len() + tail.len() < size {
        s.push_str(&format!(
            concat!(
                r#"      <m:Quote symbol="SYM{i}" currency="USD" exchange="A&amp;B" "#,
                r#"time="2026-11-22T10:00:00Z">"#,
                "<m:Price>{price}.25</m:Price>",
                "<m:Note>Q{i} &lt;adjusted&gt; &amp; rounded, &#x20AC; &#233;</m:Note>",
                "</m:Quote>\n"
            ),
            i = i,
            price = 100 + i % 900,
        ));
        i += 1;
    }
    s.push_str(tail);
    Bytes::from(s)
}

fn sizes() -> [(&'static str, Bytes); 3] {
    [
        ("1KB", message(1024)),
        ("16KB", message(16 * 1024)),
        ("1MB", message(1024 * 1024)),
    ]
}

/// A WS-Eventing notification as lather's event source sends it (about 800 bytes).
fn notification() -> Bytes {
    Bytes::from_static(concat!(
        r#"<?xml version="1.0" encoding="UTF-8"?><s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope" "#,
        r#"xmlns:wsa="http://www.w3.org/2005/08/addressing" xmlns:lev="urn:lather:eventing"><s:Header>"#,
        r#"<wsa:Action>urn:example:quotes/Changed</wsa:Action><wsa:To>http://127.0.0.1:40000/sink</wsa:To>"#,
        r#"<wsa:MessageID>urn:uuid:8c0e4f1a-93b2-4d51-a0c7-5e2f1d3b9a77</wsa:MessageID>"#,
        r#"<ev:Identifier xmlns:ev="http://schemas.xmlsoap.org/ws/2004/08/eventing" wsa:IsReferenceParameter="true">urn:uuid:0b6f2d1e-7c44-4e0a-9d2b-1f3a5c7e9b11</ev:Identifier>"#,
        r#"<lev:EventStamp seq="123456" published="1795000000123456789"/></s:Header><s:Body>"#,
        r#"<q:Quote xmlns:q="urn:example:quotes" sym="LTHR"><q:Bid>512.37</q:Bid><q:Ask>613.44</q:Ask>"#,
        r#"<q:Last>714.51</q:Last></q:Quote></s:Body></s:Envelope>"#
    )
    .as_bytes())
}

fn bench(c: &mut Criterion) {
    let limits = Limits::default();
    let fault_to = Edit::add_header(Bytes::from_static(
        b"<wsa:FaultTo xmlns:wsa=\"http://www.w3.org/2005/08/addressing\">\
          <wsa:Address>http://example.invalid/faults</wsa:Address></wsa:FaultTo>",
    ))
    .expect("a valid header block");
    let edits = [fault_to];

    let mut group = c.benchmark_group("envelope");
    for (name, msg) in sizes() {
        group.throughput(Throughput::Bytes(msg.len() as u64));
        group.bench_with_input(BenchmarkId::new("parse", name), &msg, |b, msg| {
            b.iter(|| Envelope::parse(black_box(msg.clone()), &limits).unwrap());
        });
        group.bench_with_input(BenchmarkId::new("parse+write", name), &msg, |b, msg| {
            b.iter(|| {
                let env = Envelope::parse(black_box(msg.clone()), &limits).unwrap();
                env.write(&[]).unwrap()
            });
        });
        group.bench_with_input(
            BenchmarkId::new("parse+write+edit", name),
            &msg,
            |b, msg| {
                b.iter(|| {
                    let env = Envelope::parse(black_box(msg.clone()), &limits).unwrap();
                    env.write(black_box(&edits)).unwrap()
                });
            },
        );
    }
    group.finish();

    let msg = notification();
    let stamp = QName::new("urn:lather:eventing", "EventStamp");
    let published = QName::new("", "published");
    let action = QName::new("http://www.w3.org/2005/08/addressing", "Action");
    let missing = QName::new("urn:example:epe", "Auth");
    let mut group = c.benchmark_group("notification");
    group.throughput(Throughput::Bytes(msg.len() as u64));
    // What a subscriber reads of the header: the stamp, the action, an absent EPE header.
    let read_headers = |env: &Envelope| {
        let when = env
            .header(&stamp)
            .and_then(|h| env.header_attribute(h, &published));
        let what = env.header(&action).and_then(|h| env.header_text(h));
        let auth = env.header(&missing).and_then(|h| env.header_text(h));
        (when, what, auth)
    };
    group.bench_function("consume", |b| {
        b.iter(|| {
            let env = Envelope::parse(black_box(msg.clone()), &limits).unwrap();
            let headers = read_headers(&env);
            let body = env.body();
            let fields = Element::parse(&body, &limits)
                .unwrap()
                .elements()
                .map(|f| f.text().len())
                .sum::<usize>();
            (headers, fields)
        });
    });
    // The same, the event read where it stands (`payload_element`, `text_ref`): slower for
    // an event this small, as the envelope's declarations are resolved up front.
    group.bench_function("consume in place", |b| {
        b.iter(|| {
            let env = Envelope::parse(black_box(msg.clone()), &limits).unwrap();
            let headers = read_headers(&env);
            let fields = env
                .payload_element(&limits)
                .unwrap()
                .unwrap()
                .elements()
                .map(|f| f.text_ref().len())
                .sum::<usize>();
            (headers, fields)
        });
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
