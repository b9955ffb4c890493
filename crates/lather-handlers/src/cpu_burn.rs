//! `cpu-burn`: spends a fixed amount of CPU time on each message.

use lather_pipeline::{Access, Handler, HandlerFuture, Message, Verdict};
use std::hint::black_box;
use std::time::{Duration, Instant};

/// Keeps a core busy for a fixed time per message, then continues unchanged. A benchmark
/// aid: a stand-in for CPU-bound handlers (crypto, conversion) of known cost.
#[derive(Debug, Clone)]
pub struct CpuBurn {
    work: Duration,
}

impl CpuBurn {
    /// Burns `micros` microseconds per message.
    pub fn new(micros: u64) -> Self {
        CpuBurn {
            work: Duration::from_micros(micros),
        }
    }
}

impl Handler for CpuBurn {
    fn access(&self) -> Access {
        Access::default()
    }

    fn call<'a>(&'a self, _message: &'a Message) -> HandlerFuture<'a> {
        Box::pin(async move {
            let start = Instant::now();
            let mut x = 0u64;
            while start.elapsed() < self.work {
                for i in 0..64u64 {
                    x = black_box(x.wrapping_mul(6364136223846793005).wrapping_add(i));
                }
            }
            black_box(x);
            Verdict::proceed()
        })
    }
}
