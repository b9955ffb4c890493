//! TLS failures towards an upstream, told apart from refused connections and put in words
//! that name no host: a certificate problem or an alert is a fault the client sees
//! (`UpstreamFailed`), never a refusal that sends the request to the next backend — a
//! certificate that does not verify is a configuration or security problem to be seen,
//! not hidden behind another backend.

use std::error::Error;

/// The TLS error somewhere in `e`'s chain, if any (hyper-rustls wraps it in an
/// `io::Error`, itself in hyper's error).
pub(super) fn find<'a>(e: &'a (dyn Error + 'static)) -> Option<&'a rustls::Error> {
    let mut next: Option<&'a (dyn Error + 'static)> = Some(e);
    while let Some(err) = next {
        if let Some(tls) = err.downcast_ref::<rustls::Error>() {
            return Some(tls);
        }
        next = match err.downcast_ref::<std::io::Error>() {
            // An io::Error's source skips the error it wraps: look at that one itself.
            Some(io) => io.get_ref().map(|inner| inner as &(dyn Error + 'static)),
            None => err.source(),
        };
    }
    None
}

/// What went wrong, in words that name neither the host nor the certificate's names.
pub(super) fn describe(e: &rustls::Error) -> String {
    use rustls::CertificateError as C;
    use rustls::Error as E;
    let what = match e {
        E::InvalidCertificate(cert) => match cert {
            C::UnknownIssuer => "its certificate is not issued by a trusted CA",
            C::NotValidForName | C::NotValidForNameContext { .. } => {
                "its certificate is not valid for the server name"
            }
            C::Expired | C::ExpiredContext { .. } => "its certificate has expired",
            C::NotValidYet | C::NotValidYetContext { .. } => "its certificate is not valid yet",
            C::Revoked => "its certificate is revoked",
            C::InvalidPurpose | C::InvalidPurposeContext { .. } => {
                "its certificate is not for a TLS server"
            }
            C::BadSignature => "its certificate's signature is wrong",
            _ => "its certificate is not valid",
        },
        E::AlertReceived(alert) => {
            return format!("the TLS handshake failed: the backend sent the alert {alert:?}");
        }
        E::NoApplicationProtocol => "it agreed to none of the protocols offered (ALPN)",
        E::NoCertificatesPresented => "it presented no certificate",
        E::PeerIncompatible(_) => "its TLS settings are incompatible with lather's",
        _ => "TLS error",
    };
    format!("the TLS handshake failed: {what}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wrapped_tls_error_is_found_and_described_without_names() {
        let tls = rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer);
        let io = std::io::Error::new(std::io::ErrorKind::InvalidData, tls);
        let wrapped = std::io::Error::other(io);
        let found = find(&wrapped).unwrap();
        assert_eq!(
            describe(found),
            "the TLS handshake failed: its certificate is not issued by a trusted CA"
        );
        let plain = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
        assert!(find(&plain).is_none());
        let alert = rustls::Error::AlertReceived(rustls::AlertDescription::CertificateRequired);
        assert!(describe(&alert).contains("CertificateRequired"));
    }
}
