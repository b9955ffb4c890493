//! The `xenc:EncryptedData` element: reading what a message says, writing what we send.

use super::algorithm::{EncryptionAlgorithm, XENC_NS};
use crate::base64_text;
use bytes::Bytes;
use lather_envelope::{Element, Envelope, Fault, FaultKind, Limits, QName};
use std::borrow::Cow;

/// `EncryptedData/@Type` for encrypted element content (what `encrypt` writes).
const TYPE_CONTENT: &str = "http://www.w3.org/2001/04/xmlenc#Content";
/// `EncryptedData/@Type` for one encrypted element.
const TYPE_ELEMENT: &str = "http://www.w3.org/2001/04/xmlenc#Element";

/// The local name of the element; its namespace is [`XENC_NS`].
pub(crate) const ENCRYPTED_DATA: &str = "EncryptedData";

/// What an `xenc:EncryptedData` says: how it was encrypted, and the CipherValue's base64
/// as written (whitespace included), borrowed from the parsed element.
#[derive(Debug)]
pub(crate) struct CipherText<'e> {
    /// `EncryptionMethod/@Algorithm`, as written.
    pub(crate) algorithm: String,
    /// The CipherValue, still base64.
    pub(crate) base64: Cow<'e, str>,
}

impl CipherText<'_> {
    /// The decoded CipherValue (its whitespace ignored).
    pub(crate) fn decode(&self) -> Result<Vec<u8>, Fault> {
        base64_text::decode(self.base64.as_bytes())
            .map_err(|e| invalid(format!("xenc:CipherValue is not base64 ({e})")))
    }
}

/// The Body's `xenc:EncryptedData`, parsed where it stands (read it with
/// [`read_element`]).
pub(crate) fn encrypted_payload(envelope: &Envelope) -> Result<Element, Fault> {
    envelope
        .payload_element(&Limits::default())
        .ok_or_else(|| invalid("the Body holds no xenc:EncryptedData".into()))?
        .map_err(|f| unparsable(&f))
}

/// An `xenc:EncryptedData` that does not parse, as a fault.
fn unparsable(f: &Fault) -> Fault {
    invalid(format!("xenc:EncryptedData: {}", f.reason()))
}

/// Reads a parsed `xenc:EncryptedData`. Its Type, if any, must be `#Content` or
/// `#Element`; it must name its algorithm and hold its CipherValue inline (a
/// `CipherReference` is not supported).
pub(crate) fn read_element(element: &Element) -> Result<CipherText<'_>, Fault> {
    let xenc = |local: &str| QName::new(XENC_NS, local);
    if let Some(kind) = element.attribute(&QName::new("", "Type"))
        && kind != TYPE_CONTENT
        && kind != TYPE_ELEMENT
    {
        return Err(invalid(format!(
            "xenc:EncryptedData Type {kind:?} is not supported; the Body takes {TYPE_CONTENT} or {TYPE_ELEMENT}"
        )));
    }
    let algorithm = element
        .child(&xenc("EncryptionMethod"))
        .and_then(|m| m.attribute(&QName::new("", "Algorithm")))
        .ok_or_else(|| invalid("xenc:EncryptedData has no xenc:EncryptionMethod Algorithm".into()))?
        .to_owned();
    let value = element
        .child(&xenc("CipherData"))
        .and_then(|d| d.child(&xenc("CipherValue")))
        .ok_or_else(|| {
            invalid("xenc:EncryptedData has no xenc:CipherData/xenc:CipherValue (a CipherReference is not supported)".into())
        })?;
    Ok(CipherText {
        algorithm,
        base64: value.text_ref(),
    })
}

/// The `xenc:EncryptedData` of Type `#Content` holding `cipher_value` (the CipherValue's
/// bytes) encrypted with `algorithm`.
pub(crate) fn write(algorithm: EncryptionAlgorithm, cipher_value: &[u8]) -> Bytes {
    write_typed(algorithm, cipher_value, TYPE_CONTENT)
}

/// The `xenc:EncryptedData` of Type `#Element` (one whole element encrypted).
pub(crate) fn write_element(algorithm: EncryptionAlgorithm, cipher_value: &[u8]) -> Bytes {
    write_typed(algorithm, cipher_value, TYPE_ELEMENT)
}

fn write_typed(algorithm: EncryptionAlgorithm, cipher_value: &[u8], kind: &str) -> Bytes {
    let head = format!(
        r#"<xenc:EncryptedData xmlns:xenc="{XENC_NS}" Type="{kind}"><xenc:EncryptionMethod Algorithm="{}"/><xenc:CipherData><xenc:CipherValue>"#,
        algorithm.uri()
    );
    let tail = "</xenc:CipherValue></xenc:CipherData></xenc:EncryptedData>";
    let mut out =
        String::with_capacity(head.len() + cipher_value.len().div_ceil(3) * 4 + tail.len());
    out.push_str(&head);
    base64_text::encode_into(cipher_value, &mut out);
    out.push_str(tail);
    Bytes::from(out)
}

fn invalid(reason: String) -> Fault {
    Fault::with_reason(FaultKind::InvalidSecurity, reason)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a standalone `xenc:EncryptedData` says, read as `decrypt` reads one.
    fn read(element: Bytes) -> Result<(String, Result<Vec<u8>, Fault>), Fault> {
        let parsed = Element::parse(&element, &Limits::default()).map_err(|f| unparsable(&f))?;
        let text = read_element(&parsed)?;
        Ok((text.algorithm.clone(), text.decode()))
    }

    #[test]
    fn reads_what_it_writes_and_ignores_whitespace_in_the_value() {
        let written = write(EncryptionAlgorithm::Aes128Gcm, &[0xfb, 0xff, 0x00, 1, 2]);
        let (algorithm, decoded) = read(written).unwrap();
        assert_eq!(algorithm, EncryptionAlgorithm::Aes128Gcm.uri());
        assert_eq!(decoded.unwrap(), [0xfb, 0xff, 0x00, 1, 2]);
        let spaced = format!(
            r#"<e:EncryptedData xmlns:e="{XENC_NS}"><e:EncryptionMethod Algorithm="urn:x"/><e:CipherData><e:CipherValue>
              +/8A
              AQI=
            </e:CipherValue></e:CipherData></e:EncryptedData>"#
        );
        let (algorithm, decoded) = read(spaced.into()).unwrap();
        assert_eq!(algorithm, "urn:x");
        assert_eq!(decoded.unwrap(), [0xfb, 0xff, 0x00, 1, 2]);
    }

    #[test]
    fn refuses_missing_parts_and_foreign_types() {
        let reason = |xml: &str| {
            let f = read(Bytes::copy_from_slice(xml.as_bytes())).unwrap_err();
            assert_eq!(f.kind(), FaultKind::InvalidSecurity);
            f.reason().to_owned()
        };
        let x = format!(r#"xmlns:x="{XENC_NS}""#);
        assert!(
            reason(&format!(
                r#"<x:EncryptedData {x}><x:EncryptionMethod Algorithm="a"/><x:CipherData><x:CipherReference URI="http://e/c"/></x:CipherData></x:EncryptedData>"#
            ))
            .contains("no xenc:CipherData/xenc:CipherValue")
        );
        assert!(
            reason(&format!(
                r#"<x:EncryptedData {x}><x:CipherData><x:CipherValue>AA==</x:CipherValue></x:CipherData></x:EncryptedData>"#
            ))
            .contains("no xenc:EncryptionMethod")
        );
        assert!(
            reason(&format!(
                r#"<x:EncryptedData {x} Type="http://www.w3.org/2001/04/xmlenc#EncryptedKey"/>"#
            ))
            .contains("Type")
        );
    }
}
