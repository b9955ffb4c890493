//! `cpu-burn`: spends a fixed amount of CPU time on each message.

use lather_pipeline::{
    Access, BuildEnv, Handler, HandlerFuture, HandlerKind, Message, SettingsError, Verdict, Work,
};
use serde::Deserialize;
use std::hint::black_box;
use std::sync::Arc;
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

/// The `cpu-burn` kind (CPU-bound).
#[derive(Debug, Clone, Copy, Default)]
pub struct CpuBurnKind;

/// `[handlers.NAME]` settings of kind `cpu-burn`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CpuBurnSettings {
    /// Microseconds of CPU work per message (required).
    pub micros: u64,
}

impl HandlerKind for CpuBurnKind {
    type Settings = CpuBurnSettings;

    fn name(&self) -> &'static str {
        "cpu-burn"
    }

    fn work(&self) -> Work {
        Work::Cpu
    }

    fn build(
        &self,
        settings: CpuBurnSettings,
        _env: &BuildEnv<'_>,
    ) -> Result<Arc<dyn Handler>, SettingsError> {
        Ok(Arc::new(CpuBurn::new(settings.micros)))
    }
}
