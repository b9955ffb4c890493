//! The gateway's TLS towards `https://` upstreams: the CAs their certificates are verified
//! against (a configured bundle, else the system's roots), an optional client certificate,
//! and the server name override. Verification is never turned off.

use super::TlsError;
use lather_config::UpstreamTls;
use std::sync::Arc;

/// The client configuration for `tls` (ALPN is set by the connector, per protocol); an
/// error names the key and file that cannot be used. Without `https` (no upstream can be
/// an `https://` one) nothing is read and the configuration trusts no CA.
pub(crate) fn client_config(
    tls: &UpstreamTls,
    https: bool,
) -> Result<rustls::ClientConfig, TlsError> {
    let roots = match &tls.ca_file {
        _ if !https => Arc::new(rustls::RootCertStore::empty()),
        Some(path) => Arc::new(super::pem::roots("upstream_ca_file", path)?),
        None => system_roots(),
    };
    let builder = rustls::ClientConfig::builder_with_provider(super::provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsError::new("upstream", "", e.to_string()))?
        .with_root_certificates(roots);
    match &tls.client_cert {
        _ if !https => Ok(builder.with_no_client_auth()),
        None => Ok(builder.with_no_client_auth()),
        Some((cert, key)) => {
            let keys = ("upstream_client_cert_file", "upstream_client_key_file");
            let cert_pem = super::pem::read(keys.0, cert)?;
            let key_pem = super::pem::read(keys.1, key)?;
            // Checks that the key is the certificate's before handing both over.
            let pair = super::pem::certified_key(keys, cert, key, &cert_pem, &key_pem)?;
            let private = super::pem::private_key(keys.1, key, &key_pem)?;
            builder
                .with_client_auth_cert(pair.cert, private)
                .map_err(|e| TlsError::new(keys.1, key, format!("cannot be used: {e}")))
        }
    }
}

/// The system's trusted CAs, shared with lather's other TLS clients; that none was found is
/// logged once.
fn system_roots() -> Arc<rustls::RootCertStore> {
    static CHECKED: std::sync::Once = std::sync::Once::new();
    let roots = lather_client::system_roots();
    CHECKED.call_once(|| {
        if roots.is_empty() {
            tracing::warn!(
                "no trusted CA found on this system: https:// upstreams need upstream_ca_file"
            );
        }
    });
    roots
}
