//! XML Encryption of the Body content, shared by `encrypt` and `decrypt`.
//!
//! A encrypted Body holds one element (XML Encryption 1.0 §3.1, with the GCM algorithms of
//! XML Encryption 1.1 §5.2.4):
//!
//! ```xml
//! <xenc:EncryptedData xmlns:xenc="http://www.w3.org/2001/04/xmlenc#"
//!     Type="http://www.w3.org/2001/04/xmlenc#Content">
//!   <xenc:EncryptionMethod Algorithm="http://www.w3.org/2009/xmlenc11#aes256-gcm"/>
//!   <xenc:CipherData><xenc:CipherValue>base64…</xenc:CipherValue></xenc:CipherData>
//! </xenc:EncryptedData>
//! ```
//!
//! The plaintext is the Body content as [`Envelope::extract_body`] gives it: each top-level
//! element carries the namespace declarations it relies on, so the content means the same
//! in whichever envelope it is decrypted. The key is shared beforehand (no `ds:KeyInfo`).
//!
//! [`Envelope::extract_body`]: lather_envelope::Envelope::extract_body

mod algorithm;
mod cipher;
mod encrypted_data;
mod header;
mod key;
mod settings;

pub use algorithm::{EncryptionAlgorithm, XENC_NS, XENC11_NS};
pub(crate) use cipher::{CipherError, decrypt, encrypt};
pub(crate) use encrypted_data::{
    CipherText, ENCRYPTED_DATA, encrypted_payload, read_element, write,
};
pub use header::{ENCRYPTED_HEADER, WSSE11_NS};
pub(crate) use header::{cipher_text_of, encrypted_header, encrypted_header_name, wrap_header};
pub use key::{EncryptionKey, KeyError};
pub(crate) use settings::{header_name, load_key};
