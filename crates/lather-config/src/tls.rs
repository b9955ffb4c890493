//! `[server.tls]`: TLS on the listener — the certificate and key, client certificates,
//! and how often the files are checked for a change.

use serde::Deserialize;
use toml::Spanned;

/// The default of `reload_check_ms`: the certificate and key files are checked every 10 s.
pub const DEFAULT_TLS_RELOAD_CHECK_MS: u64 = 10_000;

/// `[server.tls]`: the listener speaks HTTPS (HTTP/1.1 or HTTP/2, chosen by ALPN).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TlsConfig {
    /// The server's certificate, PEM; the chain (leaf first, then intermediates) may follow
    /// in the same file.
    pub cert_file: Spanned<String>,
    /// The certificate's private key, PEM (PKCS#8, PKCS#1 or SEC1).
    pub key_file: Spanned<String>,
    /// The CAs client certificates are verified against, a PEM bundle (needed by
    /// `client_auth = "optional"` or `"required"`).
    pub client_ca_file: Option<Spanned<String>>,
    /// Whether clients present a certificate: `"none"` (the default), `"optional"` (one
    /// presented must verify) or `"required"` (a handshake without one is refused).
    pub client_auth: Option<Spanned<ClientAuth>>,
    /// How often `cert_file` and `key_file` are checked for a change, in milliseconds
    /// (default 10 000; 0 never). A changed pair is read again and used for new
    /// handshakes; a pair that does not load is logged and the one in use kept.
    pub reload_check_ms: Option<Spanned<u64>>,
}

/// `client_auth`: what the listener asks of clients' certificates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ClientAuth {
    /// No client certificate is asked for (the default).
    #[default]
    None,
    /// A client may present a certificate; one it presents must verify against
    /// `client_ca_file`.
    Optional,
    /// Every client must present a certificate that verifies against `client_ca_file`.
    Required,
}

impl ClientAuth {
    /// The keyword as written in the configuration.
    pub fn as_str(self) -> &'static str {
        match self {
            ClientAuth::None => "none",
            ClientAuth::Optional => "optional",
            ClientAuth::Required => "required",
        }
    }
}

impl TlsConfig {
    /// What is asked of clients' certificates.
    pub fn client_auth(&self) -> ClientAuth {
        self.client_auth
            .as_ref()
            .map_or(ClientAuth::None, |a| *a.get_ref())
    }

    /// How often the certificate and key files are checked (`None`: never).
    pub fn reload_check(&self) -> Option<std::time::Duration> {
        let ms = self
            .reload_check_ms
            .as_ref()
            .map_or(DEFAULT_TLS_RELOAD_CHECK_MS, |v| *v.get_ref());
        (ms > 0).then(|| std::time::Duration::from_millis(ms))
    }

    /// The problem of these settings, with the span it is at: an empty file name, or
    /// client certificates asked for without `client_ca_file`.
    pub(crate) fn problem(&self) -> Option<(std::ops::Range<usize>, String)> {
        let files = [
            ("cert_file", Some(&self.cert_file)),
            ("key_file", Some(&self.key_file)),
            ("client_ca_file", self.client_ca_file.as_ref()),
        ];
        for (key, file) in files {
            if let Some(file) = file
                && file.get_ref().trim().is_empty()
            {
                return Some((file.span(), format!("server.tls.{key}: names no file")));
            }
        }
        if let Some(auth) = &self.client_auth
            && *auth.get_ref() != ClientAuth::None
            && self.client_ca_file.is_none()
        {
            return Some((
                auth.span(),
                format!(
                    "server.tls.client_auth: {:?} verifies client certificates against client_ca_file: set it to a PEM bundle of the CAs that issue them",
                    auth.get_ref().as_str()
                ),
            ));
        }
        None
    }
}
