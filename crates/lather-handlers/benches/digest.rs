//! The `digest` handler's own work: SHA-256 rounds over a message the size of the
//! efficiency bench's echo request, the floor under five `digest(10)` handlers.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use lather_handlers::Digest;
use std::hint::black_box;

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("digest");
    for size in [306usize, 2_000] {
        let message = vec![b'x'; size];
        for rounds in [1u32, 10] {
            group.throughput(Throughput::Bytes((size as u64) * u64::from(rounds)));
            let digest = Digest::new(rounds);
            group.bench_with_input(
                BenchmarkId::new(format!("{rounds} rounds"), size),
                &message,
                |b, message| b.iter(|| digest.run(black_box(message))),
            );
        }
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
