//! The name of a verified client certificate: its subject's common name (CN), else its
//! first DNS name (subjectAltName). Read from the DER with a small TLV walker over the
//! fields up to the extensions; anything unexpected gives no name rather than an error
//! (the certificate itself was already verified by rustls).

pub use lather_pipeline::ClientCertificate;

/// `id-at-commonName` (2.5.4.3), its OID content bytes.
const COMMON_NAME: &[u8] = &[0x55, 0x04, 0x03];
/// `id-ce-subjectAltName` (2.5.29.17).
const SUBJECT_ALT_NAME: &[u8] = &[0x55, 0x1d, 0x11];

const SEQUENCE: u8 = 0x30;
const SET: u8 = 0x31;
const OID: u8 = 0x06;
const OCTET_STRING: u8 = 0x04;
const BOOLEAN: u8 = 0x01;
/// `[0]` EXPLICIT version, `[3]` EXPLICIT extensions.
const VERSION: u8 = 0xa0;
const EXTENSIONS: u8 = 0xa3;
/// GeneralName `dNSName [2] IA5String`, implicit.
const DNS_NAME: u8 = 0x82;

/// The name of the certificate the client of `connection` presented, when it did.
pub(crate) fn of_connection<S>(
    connection: &tokio_rustls::server::TlsStream<S>,
) -> Option<ClientCertificate> {
    let chain = connection.get_ref().1.peer_certificates()?;
    of(chain.first()?)
}

/// The name of the client certificate `der` (subject CN, else first DNS name), if it has one.
pub(crate) fn of(der: &[u8]) -> Option<ClientCertificate> {
    let (tag, cert, _) = tlv(der)?;
    if tag != SEQUENCE {
        return None;
    }
    let (tag, tbs, _) = tlv(cert)?;
    if tag != SEQUENCE {
        return None;
    }
    let mut rest = tbs;
    let mut next = || {
        let (tag, content, after) = tlv(rest)?;
        rest = after;
        Some((tag, content))
    };
    // The version when present, then the serial number.
    if next()?.0 == VERSION {
        next()?;
    }
    // signature, issuer, validity, then the subject.
    for _ in 0..3 {
        next()?;
    }
    let (tag, subject) = next()?;
    if tag != SEQUENCE {
        return None;
    }
    if let Some(cn) = common_name(subject) {
        return Some(ClientCertificate(cn));
    }
    // subjectPublicKeyInfo, then optional fields up to the extensions.
    while let Some((tag, content)) = next() {
        if tag == EXTENSIONS {
            return first_dns_name(content).map(ClientCertificate);
        }
    }
    None
}

/// The first CN of an X.501 Name (a SEQUENCE of SETs of `{ type, value }`).
fn common_name(mut name: &[u8]) -> Option<String> {
    while let Some((tag, rdn, rest)) = tlv(name) {
        name = rest;
        if tag != SET {
            continue;
        }
        let mut attributes = rdn;
        while let Some((_, attribute, rest)) = tlv(attributes) {
            attributes = rest;
            let Some((OID, oid, value)) = tlv(attribute) else {
                continue;
            };
            if oid == COMMON_NAME
                && let Some((tag, text, _)) = tlv(value)
            {
                return string(tag, text);
            }
        }
    }
    None
}

/// The first dNSName of the subjectAltName extension among `extensions` (`[3]` content).
fn first_dns_name(extensions: &[u8]) -> Option<String> {
    let (SEQUENCE, mut list, _) = tlv(extensions)? else {
        return None;
    };
    while let Some((_, extension, rest)) = tlv(list) {
        list = rest;
        let Some((OID, oid, mut fields)) = tlv(extension) else {
            continue;
        };
        if oid != SUBJECT_ALT_NAME {
            continue;
        }
        if let Some((BOOLEAN, _, after)) = tlv(fields) {
            fields = after;
        }
        let (OCTET_STRING, value, _) = tlv(fields)? else {
            return None;
        };
        let (SEQUENCE, mut names, _) = tlv(value)? else {
            return None;
        };
        while let Some((tag, name, rest)) = tlv(names) {
            names = rest;
            if tag == DNS_NAME {
                return std::str::from_utf8(name).ok().map(str::to_owned);
            }
        }
        return None;
    }
    None
}

/// A directory string as text: UTF8String, PrintableString or IA5String.
fn string(tag: u8, bytes: &[u8]) -> Option<String> {
    match tag {
        0x0c | 0x13 | 0x16 => std::str::from_utf8(bytes).ok().map(str::to_owned),
        _ => None,
    }
}

/// One DER tag-length-value: the tag, the content and what follows. Single-byte tags and
/// lengths of up to four bytes.
fn tlv(input: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = input.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (len, rest) = if first < 0x80 {
        (usize::from(first), rest)
    } else {
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 4 || rest.len() < n {
            return None;
        }
        let len = rest[..n]
            .iter()
            .fold(0usize, |acc, &b| (acc << 8) | usize::from(b));
        (len, &rest[n..])
    };
    if rest.len() < len {
        return None;
    }
    Some((tag, &rest[..len], &rest[len..]))
}

#[cfg(test)]
mod tests {
    use super::of;

    fn cert(cn: Option<&str>, dns: &[&str]) -> Vec<u8> {
        let mut params =
            rcgen::CertificateParams::new(dns.iter().map(|d| (*d).to_owned()).collect::<Vec<_>>())
                .unwrap();
        params.distinguished_name = rcgen::DistinguishedName::new();
        if let Some(cn) = cn {
            params
                .distinguished_name
                .push(rcgen::DnType::OrganizationName, "Example Org");
            params
                .distinguished_name
                .push(rcgen::DnType::CommonName, cn);
        }
        let key = rcgen::KeyPair::generate().unwrap();
        params.self_signed(&key).unwrap().der().to_vec()
    }

    #[test]
    fn the_name_is_the_common_name_else_the_first_dns_name() {
        let name = |der: &[u8]| of(der).map(|c| c.0);
        assert_eq!(
            name(&cert(Some("client-7"), &["a.example"])).as_deref(),
            Some("client-7")
        );
        assert_eq!(
            name(&cert(None, &["b.example", "c.example"])).as_deref(),
            Some("b.example")
        );
        assert_eq!(name(&cert(None, &[])), None);
        let good = cert(Some("client-7"), &[]);
        for cut in [0, 1, 10, good.len() / 2, good.len() - 1] {
            // A cut certificate gives no name or a name, never a panic.
            let _ = of(&good[..cut]);
        }
        assert_eq!(of(b"\x30\x85\xff\xff\xff\xff\xff"), None);
    }
}
