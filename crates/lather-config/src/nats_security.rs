//! `[nats]` TLS and authentication: which method a configuration chose and whether TLS is
//! on.

use crate::secret::Secret;
use toml::Spanned;

/// How lather authenticates to the NATS server: at most one method per configuration.
#[derive(Debug, Clone, Copy)]
pub enum NatsAuth<'a> {
    /// Anonymous (no authentication key set).
    None,
    /// `user` and `password`.
    UserPassword {
        /// The user name.
        user: &'a str,
        /// The password.
        password: &'a Secret,
    },
    /// `token`.
    Token(&'a Secret),
    /// `nkey_seed_file`: the file holding the nkey seed the server's nonce is signed with.
    Nkey(&'a Spanned<String>),
    /// `credentials_file`: a `.creds` file holding a user JWT and its nkey seed.
    Credentials(&'a Spanned<String>),
}

impl NatsAuth<'_> {
    /// The method's name as `lather check` prints it (no secret in it).
    pub fn describe(&self) -> String {
        match self {
            NatsAuth::None => "none (anonymous)".to_owned(),
            NatsAuth::UserPassword { user, .. } => format!("user and password (user {user:?})"),
            NatsAuth::Token(_) => "token".to_owned(),
            NatsAuth::Nkey(file) => format!("nkey (seed in {})", file.get_ref()),
            NatsAuth::Credentials(file) => format!("credentials file {}", file.get_ref()),
        }
    }
}

/// Whether any of the comma-separated `urls` uses the `tls://` scheme.
pub(crate) fn has_tls_scheme(urls: &str) -> bool {
    urls.split(',')
        .any(|u| u.trim().to_ascii_lowercase().starts_with("tls://"))
}

impl crate::NatsConfig {
    /// The authentication method configured (validation made sure there is at most one;
    /// should there be several, the first of credentials, nkey, user, token wins).
    pub fn auth(&self) -> NatsAuth<'_> {
        if let Some(file) = &self.credentials_file {
            return NatsAuth::Credentials(file);
        }
        if let Some(file) = &self.nkey_seed_file {
            return NatsAuth::Nkey(file);
        }
        if let (Some(user), Some(password)) = (&self.user, &self.password) {
            return NatsAuth::UserPassword {
                user: user.get_ref(),
                password: password.get_ref(),
            };
        }
        if let Some(token) = &self.token {
            return NatsAuth::Token(token.get_ref());
        }
        NatsAuth::None
    }

    /// Whether connections must use TLS: `tls_required` when set, else on when the URL
    /// uses `tls://` or a CA or client certificate is configured.
    pub fn tls_required(&self) -> bool {
        match &self.tls_required {
            Some(v) => *v.get_ref(),
            None => {
                has_tls_scheme(self.url.get_ref())
                    || self.tls_ca_file.is_some()
                    || self.tls_client_cert_file.is_some()
            }
        }
    }
}

/// The `[nats]` authentication keys set, with their spans, in the order their methods
/// are named in errors.
pub(crate) fn auth_keys_set(
    nats: &crate::NatsConfig,
) -> Vec<(&'static str, std::ops::Range<usize>)> {
    let mut set = Vec::new();
    if let Some(v) = &nats.credentials_file {
        set.push(("credentials_file", v.span()));
    }
    if let Some(v) = &nats.nkey_seed_file {
        set.push(("nkey_seed_file", v.span()));
    }
    match (&nats.user, &nats.password) {
        (Some(v), _) => set.push(("user", v.span())),
        (None, Some(v)) => set.push(("password", v.span())),
        (None, None) => {}
    }
    if let Some(v) = &nats.token {
        set.push(("token", v.span()));
    }
    set
}
