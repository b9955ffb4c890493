//! `digest`: SHA-256 over the whole request, N times in a row.

use lather_pipeline::{
    Access, BuildEnv, Handler, HandlerFuture, HandlerKind, Message, Parts, SettingsError, Verdict,
    Work,
};
use serde::Deserialize;
use sha2::{Digest as _, Sha256};
use std::hint::black_box;
use std::sync::Arc;

/// Hashes the whole request with SHA-256 `rounds` times in a row, then continues
/// unchanged. A benchmark aid whose work is identical in any engine: the same bytes, the
/// same algorithm, the same count.
#[derive(Debug, Clone)]
pub struct Digest {
    rounds: u32,
}

impl Digest {
    /// Hashes each request `rounds` times.
    pub fn new(rounds: u32) -> Self {
        Digest { rounds }
    }

    /// The last of the `rounds` digests of `bytes` (each round hashes the whole input).
    pub fn run(&self, bytes: &[u8]) -> [u8; 32] {
        let mut out = [0u8; 32];
        for _ in 0..self.rounds {
            out = Sha256::digest(black_box(bytes)).into();
        }
        out
    }
}

impl Handler for Digest {
    fn access(&self) -> Access {
        Access::read_only(Parts::everything())
    }

    fn call<'a>(&'a self, message: &'a Message) -> HandlerFuture<'a> {
        Box::pin(async move {
            black_box(self.run(message.envelope().as_bytes()));
            Verdict::proceed()
        })
    }
}

/// The `digest` kind (CPU-bound).
#[derive(Debug, Clone, Copy, Default)]
pub struct DigestKind;

/// `[handlers.NAME]` settings of kind `digest`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DigestSettings {
    /// SHA-256 rounds over the whole request (required).
    pub rounds: u32,
}

impl HandlerKind for DigestKind {
    type Settings = DigestSettings;

    fn name(&self) -> &'static str {
        "digest"
    }

    fn work(&self) -> Work {
        Work::Cpu
    }

    fn build(
        &self,
        settings: DigestSettings,
        _env: &BuildEnv<'_>,
    ) -> Result<Arc<dyn Handler>, SettingsError> {
        Ok(Arc::new(Digest::new(settings.rounds)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_an_independent_vector() {
        // `printf abc | sha256sum` (coreutils), an independent implementation
        let expected = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
        let got: String = Digest::new(3)
            .run(b"abc")
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(got, expected);
        assert_eq!(Digest::new(0).run(b"abc"), [0u8; 32]);
    }
}
