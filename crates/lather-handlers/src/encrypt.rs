//! `encrypt`: hides the Body with XML Encryption.

use crate::xmlenc::{
    self, CipherError, ENCRYPTED_DATA, EncryptionAlgorithm, EncryptionKey, KeyError, XENC_NS,
};
use lather_envelope::{Envelope, Fault, FaultKind, QName};
use lather_pipeline::{
    Access, BuildEnv, Handler, HandlerFuture, HandlerKind, Message, Parts, Patch, SettingsError,
    Verdict, Work,
};
use serde::Deserialize;
use std::sync::Arc;

/// Replaces the Body content by one `xenc:EncryptedData` of Type `#Content`, encrypted with
/// the configured algorithm and key under a fresh random IV (and, for CBC, random ISO 10126
/// padding).
///
/// The plaintext is the Body content with the namespace declarations in scope at the Body
/// put on each top-level element ([`Envelope::extract_body`]), so it decrypts to the same
/// content in any envelope. An empty Body, a Fault (the requester must be able to see it)
/// and a Body already encrypted pass as they are.
///
/// With [`Encrypt::header`] it encrypts header blocks instead: every block of that name is
/// replaced by a WS-Security 1.1 `wsse11:EncryptedHeader` holding the whole block (Type
/// `#Element`, the block standing alone with its namespace declarations); the Body is left
/// alone.
#[derive(Debug, Clone)]
pub struct Encrypt {
    key: EncryptionKey,
    algorithm: EncryptionAlgorithm,
    header: Option<QName>,
}

impl Encrypt {
    /// Encrypts with `algorithm` under `key`; refused (with the lengths) if the key does not
    /// fit the algorithm.
    pub fn new(key: EncryptionKey, algorithm: EncryptionAlgorithm) -> Result<Self, KeyError> {
        if key.len() != algorithm.key_len() {
            return Err(KeyError::mismatch(
                algorithm.name(),
                algorithm.key_len(),
                key.len(),
            ));
        }
        Ok(Encrypt {
            key,
            algorithm,
            header: None,
        })
    }

    /// Encrypts the header blocks named `name` rather than the Body.
    pub fn header(self, name: QName) -> Self {
        Encrypt {
            header: Some(name),
            ..self
        }
    }

    fn seal(&self, plaintext: &[u8]) -> Result<Vec<u8>, Fault> {
        xmlenc::encrypt(self.algorithm, &self.key, plaintext).map_err(|e| match e {
            CipherError::NoRandomness => Fault::with_reason(
                FaultKind::Internal,
                "encrypt: the system gave no random bytes for the IV",
            ),
            e => Fault::with_reason(FaultKind::Internal, format!("encrypt: {e:?}")),
        })
    }

    fn seal_headers(&self, envelope: &Envelope, name: &QName) -> Result<Patch, Fault> {
        let mut patch = Patch::new();
        let mut any = false;
        for block in envelope.headers().iter().filter(|b| b.name() == name) {
            let sealed = self.seal(&envelope.extract_header(block))?;
            patch = patch.add_header(
                xmlenc::encrypted_header_name(),
                xmlenc::wrap_header(self.algorithm, &sealed),
            );
            any = true;
        }
        Ok(if any {
            patch.remove_header(name.clone())
        } else {
            patch
        })
    }

    fn passes(envelope: &Envelope) -> bool {
        envelope.body_child_count() == 0
            || envelope.is_fault()
            || envelope.operation() == Some(&QName::new(XENC_NS, ENCRYPTED_DATA))
    }
}

impl Handler for Encrypt {
    fn access(&self) -> Access {
        match &self.header {
            Some(name) => Access {
                reads: Parts::none().header(name.clone()),
                writes: Parts::none()
                    .header(name.clone())
                    .header(xmlenc::encrypted_header_name()),
            },
            None => Access::read_write(Parts::none().body()),
        }
    }

    fn call<'a>(&'a self, message: &'a Message) -> HandlerFuture<'a> {
        Box::pin(async move {
            let envelope = message.envelope();
            if let Some(name) = &self.header {
                return match self.seal_headers(envelope, name) {
                    Ok(patch) => Verdict::Continue(patch),
                    Err(fault) => Verdict::Fault(fault),
                };
            }
            if Self::passes(envelope) {
                return Verdict::proceed();
            }
            // The plaintext is dropped before the base64 is written.
            match self.seal(&envelope.extract_body()) {
                Ok(sealed) => Verdict::Continue(
                    Patch::new().replace_body(xmlenc::write(self.algorithm, &sealed)),
                ),
                Err(fault) => Verdict::Fault(fault),
            }
        })
    }
}

/// The `encrypt` kind (CPU-bound).
#[derive(Debug, Clone, Copy, Default)]
pub struct EncryptKind;

/// `[handlers.NAME]` settings of kind `encrypt`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EncryptSettings {
    /// The AES key: 16 or 32 raw bytes or one line of hex (required).
    pub key_file: String,
    /// `"aes256-gcm"` (default), `"aes128-gcm"`, `"aes256-cbc"` or `"aes128-cbc"`.
    pub algorithm: Option<String>,
    /// Encrypt the header blocks of this name (`{urn:ns}Local`) instead of the Body.
    pub header: Option<String>,
}

impl HandlerKind for EncryptKind {
    type Settings = EncryptSettings;

    fn name(&self) -> &'static str {
        "encrypt"
    }

    fn work(&self) -> Work {
        Work::Cpu
    }

    fn build(
        &self,
        settings: EncryptSettings,
        _env: &BuildEnv<'_>,
    ) -> Result<Arc<dyn Handler>, SettingsError> {
        let key = xmlenc::load_key(&settings.key_file)?;
        let algorithm = match settings.algorithm.as_deref() {
            None => EncryptionAlgorithm::Aes256Gcm,
            Some(a) => EncryptionAlgorithm::from_name(a).ok_or_else(|| {
                let known: Vec<&str> = EncryptionAlgorithm::ALL.iter().map(|a| a.name()).collect();
                SettingsError::key(
                    "algorithm",
                    format!("{a:?} is not one of {}", known.join(", ")),
                )
            })?,
        };
        let encrypt = Encrypt::new(key, algorithm)
            .map_err(|e| SettingsError::key("key_file", format!("{}: {e}", settings.key_file)))?;
        Ok(Arc::new(
            match xmlenc::header_name(settings.header.as_deref())? {
                Some(q) => encrypt.header(q),
                None => encrypt,
            },
        ))
    }
}
