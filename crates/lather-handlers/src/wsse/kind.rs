//! The `wsse-username` kind: its settings as a handler table gives them.

use super::handler::{WsseSettings, WsseUsername};
use lather_pipeline::{BuildEnv, Handler, HandlerKind, SettingsError};
use serde::Deserialize;
use std::sync::Arc;

/// Largest `max_nonce_bytes` accepted: a nonce is a random value, 16 bytes in practice.
const MAX_NONCE_BYTES: u64 = 1024;

/// The `wsse-username` kind.
#[derive(Debug, Clone, Copy, Default)]
pub struct WsseUsernameKind;

/// `[handlers.NAME]` settings of kind `wsse-username` (the handler's own view of them is
/// [`WsseSettings`]).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WsseUsernameSettings {
    /// The user table, one `name:password` per line (required).
    pub users_file: String,
    /// How old a `wsu:Created` may be, in seconds (default 300).
    pub window_s: Option<u64>,
    /// Longest `wsse:Nonce` accepted, in bytes once decoded (1 to 1024, default 128).
    pub max_nonce_bytes: Option<u64>,
    /// Most nonces the replay cache remembers at once (at least 1, default 100 000).
    pub max_nonces: Option<u64>,
    /// Every token must carry `wsse:Nonce` and `wsu:Created` (default false).
    #[serde(default)]
    pub require_nonce: bool,
    /// Pass the processed `wsse:Security` header on, without its passwords (default false).
    #[serde(default)]
    pub forward_security: bool,
}

impl HandlerKind for WsseUsernameKind {
    type Settings = WsseUsernameSettings;

    fn name(&self) -> &'static str {
        "wsse-username"
    }

    fn build(
        &self,
        settings: WsseUsernameSettings,
        _env: &BuildEnv<'_>,
    ) -> Result<Arc<dyn Handler>, SettingsError> {
        let file = &settings.users_file;
        let text = std::fs::read_to_string(file)
            .map_err(|e| SettingsError::key("users_file", format!("cannot read {file:?}: {e}")))?;
        let users = WsseUsername::parse_users(&text)
            .map_err(|e| SettingsError::key("users_file", format!("{file}: {e}")))?;
        let defaults = WsseSettings::default();
        let positive = |key: &'static str, value: Option<u64>, max: u64| match value {
            None => Ok(None),
            Some(v) if (1..=max).contains(&v) => Ok(Some(usize::try_from(v).unwrap_or(usize::MAX))),
            Some(_) => Err(SettingsError::key(
                key,
                format!("must be between 1 and {max}"),
            )),
        };
        let max_nonce_bytes =
            positive("max_nonce_bytes", settings.max_nonce_bytes, MAX_NONCE_BYTES)?;
        let max_nonces = positive("max_nonces", settings.max_nonces, u64::MAX)?;
        Ok(Arc::new(WsseUsername::with_settings(
            users,
            WsseSettings {
                window_s: settings.window_s.unwrap_or(defaults.window_s),
                max_nonce_bytes: max_nonce_bytes.unwrap_or(defaults.max_nonce_bytes),
                max_nonces: max_nonces.unwrap_or(defaults.max_nonces),
                require_nonce: settings.require_nonce,
                forward_security: settings.forward_security,
            },
        )))
    }
}
