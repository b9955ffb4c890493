//! A gateway's TLS towards `https://` upstreams: `upstream_ca_file`,
//! `upstream_client_cert_file` + `upstream_client_key_file` and `upstream_server_name`.

use crate::ConfigError;
use crate::model::{ServiceConfig, ServiceKind};

/// How a gateway speaks TLS to its `https://` upstreams, as configured.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UpstreamTls {
    /// The CAs upstream certificates are verified against, a PEM bundle (`None`: the
    /// system's trusted roots).
    pub ca_file: Option<String>,
    /// The client certificate (PEM) and its key presented to upstreams that ask, if any.
    pub client_cert: Option<(String, String)>,
    /// The name sent in SNI and verified in upstream certificates instead of each URL's
    /// host, if set.
    pub server_name: Option<String>,
}

impl ServiceConfig {
    /// The gateway's TLS settings towards `https://` upstreams (defaults where unset).
    pub fn upstream_tls(&self) -> UpstreamTls {
        let text = |v: &Option<toml::Spanned<String>>| v.as_ref().map(|v| v.get_ref().clone());
        UpstreamTls {
            ca_file: text(&self.upstream_ca_file),
            client_cert: text(&self.upstream_client_cert_file)
                .zip(text(&self.upstream_client_key_file)),
            server_name: text(&self.upstream_server_name),
        }
    }
}

/// The upstream TLS keys of service `i`: only on gateways, and with a fixed list only when
/// it names an `https://` upstream; the client certificate and key together; file names
/// not empty; the server name a DNS name or an IP address.
pub(crate) fn check_service(
    svc: &ServiceConfig,
    i: usize,
    at: &impl Fn(std::ops::Range<usize>, String) -> ConfigError,
) -> Result<(), ConfigError> {
    let keys = [
        ("upstream_ca_file", &svc.upstream_ca_file),
        ("upstream_client_cert_file", &svc.upstream_client_cert_file),
        ("upstream_client_key_file", &svc.upstream_client_key_file),
        ("upstream_server_name", &svc.upstream_server_name),
    ];
    let https = match svc.kind() {
        ServiceKind::Gateway(list) => {
            Some(list.iter().any(|u| u.uri.scheme_str() == Some("https")))
        }
        // A registry may list https:// endpoints at any time.
        ServiceKind::RegistryGateway(_) => Some(true),
        ServiceKind::Builtin(_) => None,
    };
    for (key, value) in keys {
        let Some(value) = value else { continue };
        match https {
            None => {
                return Err(at(
                    value.span(),
                    format!(
                        "service[{i}].{key}: only a gateway (upstream = …) has upstreams to speak TLS to"
                    ),
                ));
            }
            Some(false) => {
                return Err(at(
                    value.span(),
                    format!("service[{i}].{key}: no upstream of this service is an https:// URL"),
                ));
            }
            Some(true) => {}
        }
        if value.get_ref().trim().is_empty() {
            return Err(at(value.span(), format!("service[{i}].{key}: is empty")));
        }
    }
    match (
        &svc.upstream_client_cert_file,
        &svc.upstream_client_key_file,
    ) {
        (Some(cert), None) => {
            return Err(at(
                cert.span(),
                format!(
                    "service[{i}].upstream_client_cert_file: needs upstream_client_key_file, the certificate's private key"
                ),
            ));
        }
        (None, Some(key)) => {
            return Err(at(
                key.span(),
                format!(
                    "service[{i}].upstream_client_key_file: needs upstream_client_cert_file, the certificate it is the key of"
                ),
            ));
        }
        _ => {}
    }
    if let Some(name) = &svc.upstream_server_name
        && !is_server_name(name.get_ref())
    {
        return Err(at(
            name.span(),
            format!(
                "service[{i}].upstream_server_name: {:?} is not a DNS name or an IP address",
                name.get_ref()
            ),
        ));
    }
    Ok(())
}

/// A DNS name (labels of letters, digits, `-` and `_`, dot-separated) or an IP address.
fn is_server_name(name: &str) -> bool {
    if name.parse::<std::net::IpAddr>().is_ok() {
        return true;
    }
    let name = name.strip_suffix('.').unwrap_or(name);
    !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
                && !label.starts_with('-')
                && !label.ends_with('-')
        })
}

#[cfg(test)]
mod tests {
    use crate::{Config, UpstreamTls};

    const HTTPS: &str = "[[service]]\nname = \"g\"\npath = \"/g\"\nupstream = [\"https://backend.internal:8443/ws\"]\n";

    fn load(text: &str) -> Result<Config, crate::ConfigError> {
        Config::from_toml(text, "t.toml")
    }

    #[test]
    fn https_upstreams_and_their_keys_are_read() {
        let config = load(HTTPS).unwrap();
        assert_eq!(config.services[0].upstream_tls(), UpstreamTls::default());
        let config = load(&format!(
            "{HTTPS}upstream_ca_file = \"ca.pem\"\nupstream_client_cert_file = \"c.pem\"\nupstream_client_key_file = \"k.pem\"\nupstream_server_name = \"ws.example.com\"\n"
        ))
        .unwrap();
        let tls = config.services[0].upstream_tls();
        assert_eq!(tls.ca_file.as_deref(), Some("ca.pem"));
        assert_eq!(
            tls.client_cert,
            Some(("c.pem".to_owned(), "k.pem".to_owned()))
        );
        assert_eq!(tls.server_name.as_deref(), Some("ws.example.com"));
        load(&format!("{HTTPS}upstream_server_name = \"10.0.0.7\"\n")).unwrap();
        // A registry's list may hold https:// endpoints.
        load("[[service]]\nname = \"g\"\npath = \"/g\"\nupstream = { registry = \"http://r/reg\", name = \"q\" }\nupstream_ca_file = \"ca.pem\"\n").unwrap();
    }

    #[test]
    fn upstream_tls_keys_are_refused_where_they_mean_nothing() {
        for (text, says, line) in [
            (
                format!("{HTTPS}upstream_client_cert_file = \"c.pem\"\n"),
                "needs upstream_client_key_file",
                5,
            ),
            (
                format!("{HTTPS}upstream_client_key_file = \"k.pem\"\n"),
                "needs upstream_client_cert_file",
                5,
            ),
            (
                format!("{HTTPS}upstream_server_name = \"a b\"\n"),
                "not a DNS name",
                5,
            ),
            (
                format!("{HTTPS}upstream_ca_file = \"\"\n"),
                "upstream_ca_file: is empty",
                5,
            ),
            (
                "[[service]]\nname = \"g\"\npath = \"/g\"\nupstream = [\"http://b/ws\"]\nupstream_ca_file = \"ca.pem\"\n".to_owned(),
                "no upstream of this service is an https:// URL",
                5,
            ),
            (
                "[[service]]\nname = \"e\"\npath = \"/e\"\nbuiltin = \"echo\"\nupstream_server_name = \"a\"\n".to_owned(),
                "only a gateway",
                5,
            ),
            (
                "[[service]]\nname = \"g\"\npath = \"/g\"\nupstream = { registry = \"ftp://r/reg\", name = \"q\" }\n".to_owned(),
                "must start with http:// or https://",
                4,
            ),
        ] {
            let e = load(&text).unwrap_err();
            assert!(e.message().contains(says), "{text}: {e}");
            assert_eq!(e.line(), Some(line), "{text}: {e}");
        }
    }
}
