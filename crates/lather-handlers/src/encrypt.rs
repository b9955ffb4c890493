//! `encrypt`: hides the Body with XML Encryption.

use crate::xmlenc::{
    self, CipherError, ENCRYPTED_DATA, EncryptionAlgorithm, EncryptionKey, XENC_NS,
};
use lather_envelope::{Envelope, Fault, FaultKind, QName};
use lather_pipeline::{Access, Handler, HandlerFuture, Message, Parts, Patch, Verdict};

/// Replaces the Body content by one `xenc:EncryptedData` of Type `#Content`, encrypted with
/// the configured algorithm and key under a fresh random IV (and, for CBC, random ISO 10126
/// padding).
///
/// The plaintext is the Body content with the namespace declarations in scope at the Body
/// put on each top-level element ([`Envelope::extract_body`]), so it decrypts to the same
/// content in any envelope. An empty Body, a Fault (the requester must be able to see it)
/// and a Body already encrypted pass as they are.
#[derive(Debug, Clone)]
pub struct Encrypt {
    key: EncryptionKey,
    algorithm: EncryptionAlgorithm,
}

impl Encrypt {
    /// Encrypts with `algorithm` under `key`; refused (with the lengths) if the key does not
    /// fit the algorithm.
    pub fn new(key: EncryptionKey, algorithm: EncryptionAlgorithm) -> Result<Self, String> {
        if key.len() != algorithm.key_len() {
            return Err(format!(
                "{} needs a {}-byte key, not {} bytes",
                algorithm.name(),
                algorithm.key_len(),
                key.len()
            ));
        }
        Ok(Encrypt { key, algorithm })
    }

    fn passes(envelope: &Envelope) -> bool {
        envelope.body_child_count() == 0
            || envelope.is_fault()
            || envelope.operation() == Some(&QName::new(XENC_NS, ENCRYPTED_DATA))
    }
}

impl Handler for Encrypt {
    fn access(&self) -> Access {
        Access {
            reads: Parts::none().body(),
            writes: Parts::none().body(),
        }
    }

    fn call<'a>(&'a self, message: &'a Message) -> HandlerFuture<'a> {
        Box::pin(async move {
            let envelope = message.envelope();
            if Self::passes(envelope) {
                return Verdict::proceed();
            }
            // The plaintext is dropped before the base64 is written.
            let sealed = xmlenc::encrypt(self.algorithm, &self.key, &envelope.extract_body());
            match sealed {
                Ok(sealed) => Verdict::Continue(
                    Patch::new().replace_body(xmlenc::write(self.algorithm, &sealed)),
                ),
                Err(CipherError::NoRandomness) => Verdict::Fault(Fault::with_reason(
                    FaultKind::Internal,
                    "encrypt: the system gave no random bytes for the IV",
                )),
                Err(e) => Verdict::Fault(Fault::with_reason(
                    FaultKind::Internal,
                    format!("encrypt: {e:?}"),
                )),
            }
        })
    }
}
