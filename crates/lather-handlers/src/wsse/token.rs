//! Reading a `wsse:UsernameToken` out of a parsed `wsse:Security` block, with the bounds
//! that keep a hostile token cheap.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use lather_envelope::{Element, Fault, FaultKind, QName, WSSE_NS};
use sha1::{Digest as _, Sha1};
use std::ops::Range;

/// The WS-Security utility namespace (`wsu:Created`).
pub(crate) const WSU_NS: &str =
    "http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-wssecurity-utility-1.0.xsd";
/// `Password@Type` for a digest.
pub(crate) const PASSWORD_DIGEST: &str = "http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-username-token-profile-1.0#PasswordDigest";
/// `Password@Type` for clear text (also the default).
pub(crate) const PASSWORD_TEXT: &str = "http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-username-token-profile-1.0#PasswordText";

/// How the password is given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PasswordKind {
    /// In clear.
    Text,
    /// Base64(SHA-1(nonce ‖ created ‖ password)).
    Digest,
}

/// The parts of a UsernameToken the handler checks.
#[derive(Debug)]
pub(crate) struct UsernameToken {
    /// `wsse:Username`, trimmed.
    pub(crate) username: String,
    /// `wsse:Password`'s text, as sent.
    pub(crate) password: String,
    /// `wsse:Password@Type`.
    pub(crate) kind: PasswordKind,
    /// `wsse:Nonce`, decoded: never empty, at most the configured length.
    pub(crate) nonce: Option<Vec<u8>>,
    /// `wsu:Created`'s text, as sent (the digest covers it exactly).
    pub(crate) created: Option<String>,
    /// Where each `wsse:Password` element stands in the Security block's bytes.
    pub(crate) password_ranges: Vec<Range<usize>>,
}

fn invalid(why: impl Into<String>) -> Fault {
    Fault::with_reason(FaultKind::InvalidSecurity, why.into())
}

impl UsernameToken {
    /// Reads the token in `security`. A nonce longer than `max_nonce_bytes` once decoded is
    /// refused before it is decoded; an empty one, or one that is not base64, is refused
    /// too — all `wsse:InvalidSecurity`, as are a missing token, user name or password, or
    /// an unknown password type.
    pub(crate) fn read(security: &Element, max_nonce_bytes: usize) -> Result<Self, Fault> {
        let q = |ns: &str, local: &str| QName::new(ns, local);
        let token = security
            .child(&q(WSSE_NS, "UsernameToken"))
            .ok_or_else(|| invalid("no wsse:UsernameToken"))?;
        let username = token
            .child(&q(WSSE_NS, "Username"))
            .ok_or_else(|| invalid("no wsse:Username"))?
            .text()
            .trim()
            .to_owned();
        let password = token
            .child(&q(WSSE_NS, "Password"))
            .ok_or_else(|| invalid("no wsse:Password"))?;
        let kind = match password.attribute(&q("", "Type")).unwrap_or(PASSWORD_TEXT) {
            PASSWORD_TEXT => PasswordKind::Text,
            PASSWORD_DIGEST => PasswordKind::Digest,
            other => return Err(invalid(format!("unsupported password type {other}"))),
        };
        let nonce = match token.child(&q(WSSE_NS, "Nonce")) {
            Some(n) => Some(decode_nonce(&n.text(), max_nonce_bytes)?),
            None => None,
        };
        let password_ranges = security
            .elements()
            .filter(|e| e.name() == &q(WSSE_NS, "UsernameToken"))
            .flat_map(|t| t.elements().filter(|e| e.name() == &q(WSSE_NS, "Password")))
            .map(Element::range)
            .collect();
        Ok(UsernameToken {
            username,
            password: password.text(),
            kind,
            nonce,
            created: token.child(&q(WSU_NS, "Created")).map(Element::text),
            password_ranges,
        })
    }
}

/// The bytes of a base64 `wsse:Nonce`: refused when empty, when longer than `max` bytes
/// once decoded (judged from the text's length, before decoding), or when not base64.
fn decode_nonce(text: &str, max: usize) -> Result<Vec<u8>, Fault> {
    let text = text.trim_matches([' ', '\t', '\r', '\n']);
    if text.is_empty() {
        return Err(invalid("wsse:Nonce is empty"));
    }
    // Base64 takes 4 characters per 3 bytes; anything longer than that for `max` bytes
    // is refused without decoding.
    if text.len() > max.div_ceil(3).saturating_mul(4) {
        return Err(invalid(format!("wsse:Nonce is longer than {max} bytes")));
    }
    let bytes = STANDARD
        .decode(text)
        .map_err(|_| invalid("wsse:Nonce is not base64"))?;
    if bytes.is_empty() {
        return Err(invalid("wsse:Nonce is empty"));
    }
    if bytes.len() > max {
        return Err(invalid(format!("wsse:Nonce is longer than {max} bytes")));
    }
    Ok(bytes)
}

/// PasswordDigest before base64: SHA-1(nonce ‖ created ‖ password).
pub(crate) fn password_digest(nonce: &[u8], created: &str, password: &str) -> [u8; 20] {
    let mut h = Sha1::new();
    h.update(nonce);
    h.update(created.as_bytes());
    h.update(password.as_bytes());
    h.finalize().into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn password_digest_matches_python_hashlib() {
        // base64.b64encode(hashlib.sha1(bytes(range(16)) + b'2026-11-22T10:00:00Z' + 'p@ss wörd'.encode()).digest())
        let nonce: Vec<u8> = (0u8..16).collect();
        let digest = password_digest(&nonce, "2026-11-22T10:00:00Z", "p@ss wörd");
        assert_eq!(STANDARD.encode(digest), "Qfdhd5lnsSGTSgAhW86Wl77cdns=");
    }

    #[test]
    fn nonces_are_bounded_before_decoding() {
        let at = |n: usize| STANDARD.encode(vec![1u8; n]);
        assert_eq!(decode_nonce(&at(128), 128).unwrap().len(), 128);
        assert_eq!(decode_nonce(&at(16), 16).unwrap().len(), 16);
        for (text, why) in [
            (at(129), "longer than 128"),
            (at(2 << 20), "longer than 128"),
            (String::new(), "empty"),
            ("  \n".to_owned(), "empty"),
            ("@@@@".to_owned(), "not base64"),
        ] {
            let f = decode_nonce(&text, 128).unwrap_err();
            assert_eq!(f.kind(), FaultKind::InvalidSecurity);
            assert!(f.reason().contains(why), "{}", f.reason());
        }
    }
}
