//! Reading PEM files: certificate chains, private keys, CA bundles. Each error names the
//! configuration key and the file.

use super::TlsError;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// The bytes of `path`, named by `key` when unreadable.
pub(super) fn read(key: &str, path: &str) -> Result<Vec<u8>, TlsError> {
    std::fs::read(path).map_err(|e| TlsError::new(key, path, format!("cannot be read: {e}")))
}

/// Every certificate in `pem` (at least one), in file order.
pub(super) fn certificates(
    key: &str,
    path: &str,
    pem: &[u8],
) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let certs = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| TlsError::new(key, path, format!("is not valid PEM: {e}")))?;
    if certs.is_empty() {
        return Err(TlsError::new(
            key,
            path,
            "holds no certificate (a PEM \"BEGIN CERTIFICATE\" block)",
        ));
    }
    Ok(certs)
}

/// The first private key in `pem` (PKCS#8, PKCS#1 or SEC1).
pub(super) fn private_key(
    key: &str,
    path: &str,
    pem: &[u8],
) -> Result<PrivateKeyDer<'static>, TlsError> {
    PrivateKeyDer::from_pem_slice(pem).map_err(|e| match e {
        rustls::pki_types::pem::Error::NoItemsFound => TlsError::new(
            key,
            path,
            "holds no private key (a PEM \"BEGIN PRIVATE KEY\", \"BEGIN RSA PRIVATE KEY\" or \"BEGIN EC PRIVATE KEY\" block)",
        ),
        other => TlsError::new(key, path, format!("is not valid PEM: {other}")),
    })
}

/// The CA certificates of the bundle at `path`, as trust anchors (at least one).
pub(super) fn roots(key: &str, path: &str) -> Result<rustls::RootCertStore, TlsError> {
    roots_of(key, path, &read(key, path)?)
}

/// The CA certificates of `pem`, read from `path`, as trust anchors (at least one).
pub(super) fn roots_of(
    key: &str,
    path: &str,
    pem: &[u8],
) -> Result<rustls::RootCertStore, TlsError> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in certificates(key, path, pem)? {
        roots.add(cert).map_err(|e| {
            TlsError::new(
                key,
                path,
                format!("holds a certificate that is not a usable CA: {e}"),
            )
        })?;
    }
    Ok(roots)
}

/// A certificate chain and its private key, checked to belong together.
pub(super) fn certified_key(
    keys: (&str, &str),
    cert_path: &str,
    key_path: &str,
    cert_pem: &[u8],
    key_pem: &[u8],
) -> Result<rustls::sign::CertifiedKey, TlsError> {
    let chain = certificates(keys.0, cert_path, cert_pem)?;
    let private = private_key(keys.1, key_path, key_pem)?;
    rustls::sign::CertifiedKey::from_der(chain, private, &super::provider()).map_err(|e| match e {
        rustls::Error::InconsistentKeys(_) => TlsError::new(
            keys.1,
            key_path,
            format!("is not the key of the certificate in {cert_path:?}"),
        ),
        rustls::Error::InvalidCertificate(why) => TlsError::new(
            keys.0,
            cert_path,
            format!("holds a certificate that cannot be read: {why:?}"),
        ),
        other => TlsError::new(keys.1, key_path, format!("cannot be used: {other}")),
    })
}
