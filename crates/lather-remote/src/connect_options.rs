//! The one place a `[nats]` table becomes the NATS client's connect options: TLS (CA,
//! client certificate, whether required) and authentication (credentials file, nkey,
//! user and password, token). Every connection lather makes goes through
//! [`connect_options`], so the server, the workers and the shared stores authenticate
//! alike.
//!
//! Files are read here, when the process starts: one that cannot be read or used is a
//! [`NatsSetupError`] naming the key and the file. Secrets are handed to the client and
//! never written to a log.

use async_nats::ConnectOptions;
use async_nats::rustls;
use lather_config::{NatsAuth, NatsConfig};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::ops::Range;
use std::sync::Arc;
use toml::Spanned;

/// A `[nats]` TLS or authentication file that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum NatsSetupError {
    /// The file cannot be read.
    #[error("nats.{key}: cannot read {path}: {source}")]
    Unreadable {
        /// The key naming the file.
        key: &'static str,
        /// The file.
        path: String,
        /// Where the key's value is in the configuration.
        span: Range<usize>,
        /// Why.
        source: std::io::Error,
    },
    /// The file was read but does not hold what the key needs.
    #[error("nats.{key}: {path}: {why}")]
    Unusable {
        /// The key naming the file.
        key: &'static str,
        /// The file.
        path: String,
        /// Where the key's value is in the configuration.
        span: Range<usize>,
        /// What is wrong with it (never the secret itself).
        why: String,
    },
    /// nkey or credentials authentication is configured but this build lacks it.
    #[error(
        "nats.{key}: this build of lather has no nkey support (build with the cargo feature \
         `nats-nkeys` of lather-cli, on by default)"
    )]
    NoNkeys {
        /// The key asking for it.
        key: &'static str,
        /// Where the key's value is in the configuration.
        span: Range<usize>,
    },
}

impl NatsSetupError {
    /// Where the key at fault is in the configuration (for an error naming its line).
    pub fn span(&self) -> Range<usize> {
        match self {
            NatsSetupError::Unreadable { span, .. }
            | NatsSetupError::Unusable { span, .. }
            | NatsSetupError::NoNkeys { span, .. } => span.clone(),
        }
    }
}

/// The connect options `config` asks for: TLS and authentication, nothing else (callers
/// add their name, timeouts and callbacks). Reads the files the keys name.
pub fn connect_options(config: &NatsConfig) -> Result<ConnectOptions, NatsSetupError> {
    let mut options = ConnectOptions::new().require_tls(config.tls_required());
    if let Some(anchor) = config
        .tls_ca_file
        .as_ref()
        .or(config.tls_client_cert_file.as_ref())
    {
        options = options.tls_client_config(tls_client_config(config, anchor)?);
    }
    Ok(match config.auth() {
        NatsAuth::None => options,
        NatsAuth::UserPassword { user, password } => {
            options.user_and_password(user.to_owned(), password.expose().to_owned())
        }
        NatsAuth::Token(token) => options.token(token.expose().to_owned()),
        NatsAuth::Nkey(file) => nkey(options, file)?,
        NatsAuth::Credentials(file) => credentials(options, file)?,
    })
}

/// The rustls client configuration (ring provider) of a `[nats]` table with a CA or a
/// client certificate: the CA file's certificates as the only roots (the system's when
/// there is none), and the client certificate when set. `anchor` is the file a problem
/// with the TLS setup as a whole is reported at.
fn tls_client_config(
    config: &NatsConfig,
    anchor: &Spanned<String>,
) -> Result<rustls::ClientConfig, NatsSetupError> {
    let mut roots = rustls::RootCertStore::empty();
    match &config.tls_ca_file {
        Some(file) => {
            let certs = certificates("tls_ca_file", file)?;
            let (added, _) = roots.add_parsable_certificates(certs);
            if added == 0 {
                return Err(unusable(
                    "tls_ca_file",
                    file,
                    "no usable CA certificate in it",
                ));
            }
        }
        None => {
            let native = rustls_native_certs::load_native_certs();
            roots.add_parsable_certificates(native.certs);
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| unusable("tls_ca_file", anchor, &e.to_string()))?
        .with_root_certificates(roots);
    match (&config.tls_client_cert_file, &config.tls_client_key_file) {
        (Some(cert_file), Some(key_file)) => {
            let chain = certificates("tls_client_cert_file", cert_file)?;
            if chain.is_empty() {
                return Err(unusable(
                    "tls_client_cert_file",
                    cert_file,
                    "no PEM certificate in it",
                ));
            }
            let key_pem = read("tls_client_key_file", key_file)?;
            let key = PrivateKeyDer::from_pem_slice(&key_pem).map_err(|_| {
                unusable(
                    "tls_client_key_file",
                    key_file,
                    "no PEM private key (PKCS#8, PKCS#1 or SEC1) in it",
                )
            })?;
            builder.with_client_auth_cert(chain, key).map_err(|e| {
                unusable(
                    "tls_client_key_file",
                    key_file,
                    &format!("does not go with tls_client_cert_file: {e}"),
                )
            })
        }
        _ => Ok(builder.with_no_client_auth()),
    }
}

/// The PEM certificates in the file `key` names.
fn certificates(
    key: &'static str,
    file: &Spanned<String>,
) -> Result<Vec<CertificateDer<'static>>, NatsSetupError> {
    let pem = read(key, file)?;
    CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| unusable(key, file, &format!("not a PEM certificate bundle: {e}")))
}

/// The bytes of the file `key` names.
fn read(key: &'static str, file: &Spanned<String>) -> Result<Vec<u8>, NatsSetupError> {
    std::fs::read(file.get_ref()).map_err(|source| NatsSetupError::Unreadable {
        key,
        path: file.get_ref().clone(),
        span: file.span(),
        source,
    })
}

fn unusable(key: &'static str, file: &Spanned<String>, why: &str) -> NatsSetupError {
    NatsSetupError::Unusable {
        key,
        path: file.get_ref().clone(),
        span: file.span(),
        why: why.to_owned(),
    }
}

/// nkey authentication with the seed in `file` (its first non-blank line).
#[cfg(feature = "nkeys")]
fn nkey(options: ConnectOptions, file: &Spanned<String>) -> Result<ConnectOptions, NatsSetupError> {
    let text = read("nkey_seed_file", file)?;
    let seed = String::from_utf8_lossy(&text)
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or_default()
        .to_owned();
    match nkeys::KeyPair::from_seed(&seed) {
        Ok(pair) if seed.starts_with("SU") => {
            tracing::debug!(public_key = %pair.public_key(), "NATS nkey authentication");
            Ok(options.nkey(seed))
        }
        _ => Err(unusable(
            "nkey_seed_file",
            file,
            "no user nkey seed (a line starting SU) in it",
        )),
    }
}

#[cfg(not(feature = "nkeys"))]
fn nkey(_: ConnectOptions, file: &Spanned<String>) -> Result<ConnectOptions, NatsSetupError> {
    Err(NatsSetupError::NoNkeys {
        key: "nkey_seed_file",
        span: file.span(),
    })
}

/// Authentication with the user JWT and nkey seed of the `.creds` file `file`.
#[cfg(feature = "nkeys")]
fn credentials(
    options: ConnectOptions,
    file: &Spanned<String>,
) -> Result<ConnectOptions, NatsSetupError> {
    let text = read("credentials_file", file)?;
    let text = String::from_utf8(text)
        .map_err(|_| unusable("credentials_file", file, "not a text file"))?;
    options.credentials(&text).map_err(|_| {
        unusable(
            "credentials_file",
            file,
            "not a NATS credentials file (a user JWT and an nkey seed, each between its \
             BEGIN and END lines)",
        )
    })
}

#[cfg(not(feature = "nkeys"))]
fn credentials(
    _: ConnectOptions,
    file: &Spanned<String>,
) -> Result<ConnectOptions, NatsSetupError> {
    Err(NatsSetupError::NoNkeys {
        key: "credentials_file",
        span: file.span(),
    })
}
