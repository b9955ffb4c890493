//! `decrypt`: restores a Body encrypted by XML Encryption.

use crate::xmlenc::{
    self, CipherError, ENCRYPTED_DATA, EncryptionAlgorithm, EncryptionKey, XENC_NS,
};
use bytes::Bytes;
use lather_envelope::{Edit, Element, Envelope, Fault, FaultKind, Limits, QName};
use lather_pipeline::{Access, Handler, HandlerFuture, Message, Parts, Patch, Verdict};

/// The one reason given for every failure that involves the key — a tag that does not
/// verify, impossible padding, a plaintext that is not XML — so a client cannot tell them
/// apart (no padding oracle).
const UNDECRYPTABLE: &str = "the xenc:EncryptedData could not be decrypted";

/// Replaces a Body holding one `xenc:EncryptedData` (Type `#Content` or `#Element`) by its
/// plaintext, decrypted with the configured key: AES-GCM (XML Encryption 1.1) or AES-CBC
/// (1.0), 128 or 256 bits, as `xenc:EncryptionMethod/@Algorithm` says.
///
/// The plaintext becomes the Body content: it must be UTF-8, well-formed element content,
/// and declare the namespaces it uses — or rely on those in scope at the Body — as the
/// plaintext `encrypt` writes does. The server's limits apply to the result, as to any
/// patched message.
///
/// Faults: an unknown algorithm or one the key does not fit → `wsse:UnsupportedAlgorithm`;
/// a malformed EncryptedData (no CipherValue, bad base64, a CipherValue too short for its
/// algorithm, other content beside it) → `wsse:InvalidSecurity`; a tag that does not
/// verify, bad padding or a plaintext that is not XML → `wsse:FailedCheck`, with one reason
/// for all. A Body that is not encrypted passes, unless `required`.
///
/// CBC is not authenticated: an attacker who can send altered ciphertexts and watch which
/// are refused may learn the plaintext (Jager and Somorovsky, "How to Break XML
/// Encryption", 2011) whatever the fault says. Prefer GCM.
///
/// With [`Decrypt::header`] it restores encrypted header blocks instead: each
/// `wsse11:EncryptedHeader` must decrypt to a block of that name, which takes its place
/// (one encrypted by `encrypt` with the same `header`); the Body is left alone. A plaintext
/// of another name is `wsse:FailedCheck` too: this handler declares only the one it writes.
#[derive(Debug, Clone)]
pub struct Decrypt {
    key: EncryptionKey,
    required: bool,
    header: Option<QName>,
}

impl Decrypt {
    /// Decrypts with `key`; with `required`, a Body that is not encrypted is refused.
    pub fn new(key: EncryptionKey, required: bool) -> Self {
        Decrypt {
            key,
            required,
            header: None,
        }
    }

    /// Restores the header blocks named `name` rather than the Body.
    pub fn header(self, name: QName) -> Self {
        Decrypt {
            header: Some(name),
            ..self
        }
    }

    /// The patch restoring every encrypted header block, or `None` if there is none.
    fn open_headers(&self, envelope: &Envelope, name: &QName) -> Result<Option<Patch>, Fault> {
        let wrapper = xmlenc::encrypted_header_name();
        let mut patch = Patch::new();
        let mut any = false;
        for block in envelope.headers().iter().filter(|b| b.name() == &wrapper) {
            let data = xmlenc::encrypted_data_of(&envelope.extract_header(block))?;
            let plaintext = self.open(data)?;
            let restored = Element::parse(&plaintext, &Limits::default())
                .map_err(|_| Fault::with_reason(FaultKind::FailedCheck, UNDECRYPTABLE))?;
            if restored.name() != name {
                return Err(Fault::with_reason(FaultKind::FailedCheck, UNDECRYPTABLE));
            }
            patch = patch.add_header(name.clone(), plaintext);
            any = true;
        }
        if !any && self.required {
            return Err(Fault::with_reason(
                FaultKind::InvalidSecurity,
                format!("no wsse11:EncryptedHeader: an encrypted {name} is required"),
            ));
        }
        Ok(any.then(|| patch.remove_header(wrapper)))
    }

    /// The plaintext Body content, or `None` for a Body that is not encrypted.
    fn plaintext(&self, envelope: &Envelope) -> Result<Option<Bytes>, Fault> {
        let invalid = |why: &str| Fault::with_reason(FaultKind::InvalidSecurity, why.to_owned());
        if envelope.operation() != Some(&QName::new(XENC_NS, ENCRYPTED_DATA)) {
            return if self.required {
                Err(invalid(
                    "the Body is not encrypted: an xenc:EncryptedData is required",
                ))
            } else {
                Ok(None)
            };
        }
        if envelope.body_child_count() != 1 {
            return Err(invalid(
                "the xenc:EncryptedData must be the only element in the Body",
            ));
        }
        let plaintext = self.open(envelope.extract_payload().unwrap_or_default())?;
        let plaintext = Bytes::from(plaintext);
        // Checked here rather than left to the engine's check of the patch, so that a
        // plaintext that is not XML gets the same answer as a tag that does not verify.
        Edit::replace_body(plaintext.clone())
            .map_err(|_| Fault::with_reason(FaultKind::FailedCheck, UNDECRYPTABLE))?;
        Ok(Some(plaintext))
    }

    /// The plaintext of one `xenc:EncryptedData` standing alone.
    fn open(&self, encrypted_data: Bytes) -> Result<Vec<u8>, Fault> {
        let cipher_text = xmlenc::read(encrypted_data)?;
        let uri = &cipher_text.algorithm;
        let algorithm = EncryptionAlgorithm::from_uri(uri).ok_or_else(|| {
            let known: Vec<&str> = EncryptionAlgorithm::ALL.iter().map(|a| a.uri()).collect();
            Fault::with_reason(
                FaultKind::UnsupportedAlgorithm,
                format!(
                    "encryption algorithm {uri} is not supported; supported: {}",
                    known.join(", ")
                ),
            )
        })?;
        let data = cipher_text.decode()?;
        drop(cipher_text);
        xmlenc::decrypt(algorithm, &self.key, data).map_err(|e| match e {
            CipherError::KeyLength => Fault::with_reason(
                FaultKind::UnsupportedAlgorithm,
                format!(
                    "encryption algorithm {} does not fit this service's key",
                    algorithm.uri()
                ),
            ),
            CipherError::Shape(why) => Fault::with_reason(
                FaultKind::InvalidSecurity,
                format!("the {} xenc:CipherValue is {why}", algorithm.name()),
            ),
            CipherError::Undecryptable | CipherError::NoRandomness => {
                Fault::with_reason(FaultKind::FailedCheck, UNDECRYPTABLE)
            }
        })
    }
}

impl Handler for Decrypt {
    fn access(&self) -> Access {
        match &self.header {
            Some(name) => Access {
                reads: Parts::none().header(xmlenc::encrypted_header_name()),
                writes: Parts::none()
                    .header(xmlenc::encrypted_header_name())
                    .header(name.clone()),
            },
            None => Access::read_write(Parts::none().body()),
        }
    }

    fn call<'a>(&'a self, message: &'a Message) -> HandlerFuture<'a> {
        Box::pin(async move {
            if let Some(name) = &self.header {
                return match self.open_headers(message.envelope(), name) {
                    Ok(Some(patch)) => Verdict::Continue(patch),
                    Ok(None) => Verdict::proceed(),
                    Err(fault) => Verdict::Fault(fault),
                };
            }
            match self.plaintext(message.envelope()) {
                Ok(Some(content)) => Verdict::Continue(Patch::new().replace_body(content)),
                Ok(None) => Verdict::proceed(),
                Err(fault) => Verdict::Fault(fault),
            }
        })
    }
}
