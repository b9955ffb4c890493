//! `decrypt`: restores a Body encrypted by XML Encryption.

use crate::wsse::security_header;
use crate::xmlenc::{
    self, CipherError, ENCRYPTED_DATA, EncryptionAlgorithm, EncryptionKey, XENC_NS,
};
use bytes::Bytes;
use lather_envelope::{Edit, Element, Envelope, Fault, FaultKind, Limits, QName};
use lather_pipeline::{
    Access, BuildEnv, Handler, HandlerFuture, HandlerKind, Message, Parts, Patch, SettingsError,
    Verdict, Work,
};
use serde::Deserialize;
use std::sync::Arc;

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
///
/// Once something is decrypted, the `xenc:ReferenceList` and `xenc:EncryptedKey` elements
/// of the `wsse:Security` header aimed at this node are taken out — they point at the
/// ciphertext that is gone — and the header with them when nothing else is left in it, so
/// a service behind a gateway does not get a mandatory header about encryption it never
/// sees. Other parts (a UsernameToken for a later `wsse-username`) stay. With
/// [`Decrypt::forward_security`] the header is passed on as it came.
#[derive(Debug, Clone)]
pub struct Decrypt {
    key: EncryptionKey,
    required: bool,
    header: Option<QName>,
    forward_security: bool,
}

impl Decrypt {
    /// Decrypts with `key`; with `required`, a Body that is not encrypted is refused.
    pub fn new(key: EncryptionKey, required: bool) -> Self {
        Decrypt {
            key,
            required,
            header: None,
            forward_security: false,
        }
    }

    /// With `forward`, the `wsse:Security` header is passed on as it came rather than
    /// cleared of its encryption parts.
    pub fn forward_security(self, forward: bool) -> Self {
        Decrypt {
            forward_security: forward,
            ..self
        }
    }

    /// Whether this handler clears the Security header aimed at this node (not when asked
    /// to forward it, nor when the header it restores is `wsse:Security` itself).
    fn clears_security(&self) -> bool {
        !self.forward_security && self.header.as_ref() != Some(&security_header::security_name())
    }

    /// The patch taking the encryption parts out of the Security header aimed at this
    /// node, appended to `patch`.
    fn clear_security(&self, envelope: &Envelope, patch: Patch) -> Result<Patch, Fault> {
        if !self.clears_security() {
            return Ok(patch);
        }
        let Some(block) = security_header::find(envelope)? else {
            return Ok(patch);
        };
        let bytes = envelope.extract_header(block);
        let security = Element::parse(&bytes, &Limits::default()).map_err(|f| {
            Fault::with_reason(
                FaultKind::InvalidSecurity,
                format!("wsse:Security: {}", f.reason()),
            )
        })?;
        let ours = |e: &Element| {
            e.name() == &QName::new(XENC_NS, "ReferenceList")
                || e.name() == &QName::new(XENC_NS, "EncryptedKey")
        };
        let cut: Vec<_> = security
            .elements()
            .filter(|e| ours(e))
            .map(Element::range)
            .collect();
        if cut.is_empty() {
            return Ok(patch);
        }
        let rest = security.elements().any(|e| !ours(e));
        let replacement = rest.then(|| security_header::rewrite(&bytes, &security, cut, false));
        let clear = security_header::replace(envelope, replacement);
        Ok(clear
            .operations()
            .iter()
            .fold(patch, |p, op| p.with(op.clone())))
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
            // Read where it stands; the tree, with its copy of the CipherValue, is dropped
            // once the value is decrypted.
            let plaintext = {
                let element = xmlenc::encrypted_header(envelope, block)?;
                Bytes::from(self.open(xmlenc::cipher_text_of(&element)?)?)
            };
            // Checked here, once: a plaintext that is not one element named `name` gets the
            // same answer as a tag that does not verify, and the engine applies the checked
            // block without reading it again.
            let restored = Edit::add_header(plaintext)
                .ok()
                .filter(|block| block.header_name().as_ref() == Some(name))
                .ok_or_else(|| Fault::with_reason(FaultKind::FailedCheck, UNDECRYPTABLE))?;
            patch = patch.add_checked_header(name.clone(), restored);
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
        let plaintext = {
            let element = xmlenc::encrypted_payload(envelope)?;
            Bytes::from(self.open(xmlenc::read_element(&element)?)?)
        };
        // Checked here rather than left to the engine's check of the patch, so that a
        // plaintext that is not XML gets the same answer as a tag that does not verify.
        Edit::replace_body(plaintext.clone())
            .map_err(|_| Fault::with_reason(FaultKind::FailedCheck, UNDECRYPTABLE))?;
        Ok(Some(plaintext))
    }

    /// The plaintext of one `xenc:EncryptedData`.
    fn open(&self, cipher_text: xmlenc::CipherText<'_>) -> Result<Vec<u8>, Fault> {
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
        let mut access = match &self.header {
            Some(name) => Access {
                reads: Parts::none().header(xmlenc::encrypted_header_name()),
                writes: Parts::none()
                    .header(xmlenc::encrypted_header_name())
                    .header(name.clone()),
            },
            None => Access::read_write(Parts::none().body()),
        };
        if self.clears_security() {
            let security = security_header::security_name();
            access.reads = access.reads.header(security.clone());
            access.writes = access.writes.header(security);
        }
        access
    }

    fn call<'a>(&'a self, message: &'a Message) -> HandlerFuture<'a> {
        Box::pin(async move {
            let envelope = message.envelope();
            let opened = match &self.header {
                Some(name) => self.open_headers(envelope, name),
                None => self
                    .plaintext(envelope)
                    .map(|content| content.map(|c| Patch::new().replace_body(c))),
            };
            match opened.and_then(|patch| match patch {
                Some(patch) => self.clear_security(envelope, patch),
                None => Ok(Patch::new()),
            }) {
                Ok(patch) => Verdict::Continue(patch),
                Err(fault) => Verdict::Fault(fault),
            }
        })
    }
}

/// The `decrypt` kind (CPU-bound).
#[derive(Debug, Clone, Copy, Default)]
pub struct DecryptKind;

/// `[handlers.NAME]` settings of kind `decrypt`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DecryptSettings {
    /// The AES key: 16 or 32 raw bytes or one line of hex (required).
    pub key_file: String,
    /// A Body (or header) that is not encrypted is refused (default false).
    #[serde(default)]
    pub required: bool,
    /// Restore the header blocks of this name (`{urn:ns}Local`) instead of the Body.
    pub header: Option<String>,
    /// Pass the `wsse:Security` header on as it came (default false: its encryption parts
    /// are taken out).
    #[serde(default)]
    pub forward_security: bool,
}

impl HandlerKind for DecryptKind {
    type Settings = DecryptSettings;

    fn name(&self) -> &'static str {
        "decrypt"
    }

    fn work(&self) -> Work {
        Work::Cpu
    }

    fn build(
        &self,
        settings: DecryptSettings,
        _env: &BuildEnv<'_>,
    ) -> Result<Arc<dyn Handler>, SettingsError> {
        let decrypt = Decrypt::new(xmlenc::load_key(&settings.key_file)?, settings.required)
            .forward_security(settings.forward_security);
        Ok(Arc::new(
            match xmlenc::header_name(settings.header.as_deref())? {
                Some(q) => decrypt.header(q),
                None => decrypt,
            },
        ))
    }
}
