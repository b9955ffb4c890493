//! Encrypted header blocks, as WS-Security 1.1 writes them: the whole block encrypted
//! (`xenc:EncryptedData` of Type `#Element`) inside a `wsse11:EncryptedHeader` block.
//!
//! ```xml
//! <wsse11:EncryptedHeader xmlns:wsse11="http://docs.oasis-open.org/wss/oasis-wss-wssecurity-secext-1.1.xsd">
//!   <xenc:EncryptedData Type="http://www.w3.org/2001/04/xmlenc#Element">…</xenc:EncryptedData>
//! </wsse11:EncryptedHeader>
//! ```

use super::algorithm::{EncryptionAlgorithm, XENC_NS};
use super::encrypted_data::{CipherText, ENCRYPTED_DATA, read_element, write_element};
use bytes::{Bytes, BytesMut};
use lather_envelope::{Element, Envelope, Fault, FaultKind, HeaderBlock, Limits, QName};

/// The WS-Security 1.1 namespace (`wsse11`).
pub const WSSE11_NS: &str = "http://docs.oasis-open.org/wss/oasis-wss-wssecurity-secext-1.1.xsd";

/// The local name of the encrypted header block.
pub const ENCRYPTED_HEADER: &str = "EncryptedHeader";

/// `{wsse11}EncryptedHeader`.
pub(crate) fn encrypted_header_name() -> QName {
    QName::new(WSSE11_NS, ENCRYPTED_HEADER)
}

/// The `wsse11:EncryptedHeader` block holding `cipher_value` encrypted with `algorithm`.
pub(crate) fn wrap_header(algorithm: EncryptionAlgorithm, cipher_value: &[u8]) -> Bytes {
    let data = write_element(algorithm, cipher_value);
    let head = format!(r#"<wsse11:EncryptedHeader xmlns:wsse11="{WSSE11_NS}">"#);
    let tail = "</wsse11:EncryptedHeader>";
    let mut out = BytesMut::with_capacity(head.len() + data.len() + tail.len());
    out.extend_from_slice(head.as_bytes());
    out.extend_from_slice(&data);
    out.extend_from_slice(tail.as_bytes());
    out.freeze()
}

/// What the `xenc:EncryptedData` inside a parsed `EncryptedHeader` block says.
pub(crate) fn cipher_text_of(block: &Element) -> Result<CipherText<'_>, Fault> {
    let data = block
        .child(&QName::new(XENC_NS, ENCRYPTED_DATA))
        .ok_or_else(|| {
            Fault::with_reason(
                FaultKind::InvalidSecurity,
                "wsse11:EncryptedHeader holds no xenc:EncryptedData",
            )
        })?;
    read_element(data)
}

/// The `wsse11:EncryptedHeader` `block` of `envelope`, parsed where it stands (read it with
/// [`cipher_text_of`]).
pub(crate) fn encrypted_header(envelope: &Envelope, block: &HeaderBlock) -> Result<Element, Fault> {
    envelope
        .header_element(block, &Limits::default())
        .map_err(|f| {
            Fault::with_reason(
                FaultKind::InvalidSecurity,
                format!("wsse11:EncryptedHeader: {}", f.reason()),
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wrapped_data_can_be_found_again() {
        let parse = |b: &[u8]| Element::parse(b, &Limits::default()).unwrap();
        let block = parse(&wrap_header(EncryptionAlgorithm::Aes128Gcm, &[1, 2, 3]));
        let read = cipher_text_of(&block).unwrap();
        assert_eq!(read.decode().unwrap(), [1, 2, 3]);
        let empty = parse(format!(r#"<w:EncryptedHeader xmlns:w="{WSSE11_NS}"/>"#).as_bytes());
        let f = cipher_text_of(&empty).unwrap_err();
        assert_eq!(f.kind(), FaultKind::InvalidSecurity);
    }
}
