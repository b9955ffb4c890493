//! A gzip member of a notification-sized and a Body-sized message: a fresh encoder per
//! message (flate2's `GzEncoder`) against this crate's per-thread state.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use flate2::Compression;
use flate2::write::GzEncoder;
use lather_gzip::{Level, gzip};
use std::hint::black_box;
use std::io::Write;

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("gzip");
    for size in [2_000usize, 16_000, 256_000] {
        let record =
            "<n:Quote xmlns:n=\"urn:quotes\"><symbol>LATH</symbol><price>42.17</price></n:Quote>";
        let plain: Vec<u8> = record.repeat(size / record.len() + 1).into_bytes()[..size].to_vec();
        group.throughput(Throughput::Bytes(size as u64));
        group.bench_with_input(BenchmarkId::new("fresh", size), &plain, |b, plain| {
            b.iter(|| {
                let mut encoder = GzEncoder::new(Vec::new(), Compression::default());
                encoder.write_all(black_box(plain)).unwrap();
                encoder.finish().unwrap()
            })
        });
        group.bench_with_input(BenchmarkId::new("per-thread", size), &plain, |b, plain| {
            b.iter(|| gzip(black_box(plain), Level::Default).unwrap())
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
