//! `compress`: replaces a large Body with its compressed form.

use crate::compressed_body::{self, Algorithm};
use lather_pipeline::{
    Access, BuildEnv, Handler, HandlerFuture, HandlerKind, Message, Parts, Patch, SettingsError,
    Verdict, Work,
};
use serde::Deserialize;
use std::sync::Arc;

/// Compresses the Body content into one `lc:Compressed` element (see the convention in
/// `compressed_body`) when it is at least `min_bytes` long; smaller Bodies, whose
/// compression would cost more than it saves, and Bodies already compressed pass as they
/// are.
#[derive(Debug, Clone)]
pub struct Compress {
    algorithm: Algorithm,
    min_bytes: usize,
}

impl Compress {
    /// Compresses with `algorithm` Bodies of at least `min_bytes` bytes.
    pub fn new(algorithm: Algorithm, min_bytes: usize) -> Self {
        Compress {
            algorithm,
            min_bytes,
        }
    }
}

impl Handler for Compress {
    fn access(&self) -> Access {
        Access::read_write(Parts::none().body())
    }

    fn call<'a>(&'a self, message: &'a Message) -> HandlerFuture<'a> {
        Box::pin(async move {
            let envelope = message.envelope();
            let content = envelope.body();
            if content.len() < self.min_bytes || compressed_body::is_compressed(envelope) {
                return Verdict::proceed();
            }
            Verdict::Continue(
                Patch::new().replace_body(compressed_body::encode(&content, self.algorithm)),
            )
        })
    }
}

/// The `compress` kind (CPU-bound).
#[derive(Debug, Clone, Copy, Default)]
pub struct CompressKind;

/// `[handlers.NAME]` settings of kind `compress`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CompressSettings {
    /// `"gzip"` (default) or `"deflate"`.
    pub algorithm: Option<String>,
    /// Body content smaller than this (bytes) is left as it is (default 1024).
    #[serde(default = "default_min_bytes")]
    pub min_bytes: u64,
}

fn default_min_bytes() -> u64 {
    1024
}

impl HandlerKind for CompressKind {
    type Settings = CompressSettings;

    fn name(&self) -> &'static str {
        "compress"
    }

    fn work(&self) -> Work {
        Work::Cpu
    }

    fn build(
        &self,
        settings: CompressSettings,
        _env: &BuildEnv<'_>,
    ) -> Result<Arc<dyn Handler>, SettingsError> {
        let algorithm = match settings.algorithm.as_deref() {
            None => Algorithm::Gzip,
            Some(a) => Algorithm::parse(a).ok_or_else(|| {
                SettingsError::key("algorithm", format!("{a:?} is not gzip or deflate"))
            })?,
        };
        let min = usize::try_from(settings.min_bytes).unwrap_or(usize::MAX);
        Ok(Arc::new(Compress::new(algorithm, min)))
    }
}
