//! `decompress`: restores a compressed Body.

use crate::compressed_body;
use lather_pipeline::{
    Access, BuildEnv, Handler, HandlerFuture, HandlerKind, Message, Parts, Patch, SettingsError,
    Verdict, Work,
};
use serde::Deserialize;
use std::sync::Arc;

/// Restores a Body compressed by the `lc:Compressed` convention (see `compressed_body`),
/// refusing output above `max_bytes` (`DecodedTooLarge`) and undecodable data
/// (`BadCompressedBody`). A Body that is not compressed passes as it is, so a service can
/// take both.
#[derive(Debug, Clone)]
pub struct Decompress {
    max_bytes: usize,
}

impl Decompress {
    /// Accepts decompressed Bodies of at most `max_bytes` bytes.
    pub fn new(max_bytes: usize) -> Self {
        Decompress { max_bytes }
    }
}

impl Handler for Decompress {
    fn access(&self) -> Access {
        Access::read_write(Parts::none().body())
    }

    fn call<'a>(&'a self, message: &'a Message) -> HandlerFuture<'a> {
        Box::pin(async move {
            let envelope = message.envelope();
            if !compressed_body::is_compressed(envelope) {
                return Verdict::proceed();
            }
            match compressed_body::decode(envelope, self.max_bytes) {
                Ok(content) => Verdict::Continue(Patch::new().replace_body(content)),
                Err(fault) => Verdict::Fault(fault),
            }
        })
    }
}

/// The `decompress` kind (CPU-bound).
#[derive(Debug, Clone, Copy, Default)]
pub struct DecompressKind;

/// `[handlers.NAME]` settings of kind `decompress`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DecompressSettings {
    /// Largest decompressed Body accepted, in bytes (default 4 MiB).
    #[serde(default = "default_max_bytes")]
    pub max_bytes: u64,
}

fn default_max_bytes() -> u64 {
    4 * 1024 * 1024
}

impl HandlerKind for DecompressKind {
    type Settings = DecompressSettings;

    fn name(&self) -> &'static str {
        "decompress"
    }

    fn work(&self) -> Work {
        Work::Cpu
    }

    fn build(
        &self,
        settings: DecompressSettings,
        _env: &BuildEnv<'_>,
    ) -> Result<Arc<dyn Handler>, SettingsError> {
        let max = usize::try_from(settings.max_bytes).unwrap_or(usize::MAX);
        Ok(Arc::new(Decompress::new(max)))
    }
}
