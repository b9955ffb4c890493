//! Why a handler kind could not make a handler.

use std::borrow::Cow;
use std::fmt;

/// A kind's refusal of its settings: which key (when one is to blame) and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SettingsError {
    key: Option<Cow<'static, str>>,
    message: String,
}

impl SettingsError {
    /// The setting `key` is wrong: `message` says how (e.g. "must be greater than 0").
    pub fn key(key: impl Into<Cow<'static, str>>, message: impl Into<String>) -> Self {
        SettingsError {
            key: Some(key.into()),
            message: message.into(),
        }
    }

    /// The settings as a whole are wrong (no one key to blame).
    pub fn whole(message: impl Into<String>) -> Self {
        SettingsError {
            key: None,
            message: message.into(),
        }
    }

    /// The key the error is about, if any.
    pub fn setting(&self) -> Option<&str> {
        self.key.as_deref()
    }

    /// What is wrong.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for SettingsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.key {
            Some(key) => write!(f, "{key}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for SettingsError {}

/// Why [`DynKind::build_from`](crate::DynKind::build_from) failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KindError {
    /// The settings table does not fit the kind's settings type (an unknown key, a missing
    /// one, a wrong type); `span` is the byte range in the TOML text, when known.
    Shape {
        /// What the TOML reader said.
        message: String,
        /// Where in the configuration text.
        span: Option<std::ops::Range<usize>>,
    },
    /// The kind refused the settings.
    Settings(SettingsError),
}

impl fmt::Display for KindError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KindError::Shape { message, .. } => f.write_str(message),
            KindError::Settings(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for KindError {}

impl From<SettingsError> for KindError {
    fn from(e: SettingsError) -> Self {
        KindError::Settings(e)
    }
}
