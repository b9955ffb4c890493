//! `compress`: replaces a large Body with its compressed form.

use crate::compressed_body::{self, Algorithm};
use lather_pipeline::{Access, Handler, HandlerFuture, Message, Parts, Patch, Verdict};

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
