//! Configuration errors that point at the offending line.

use std::fmt;

/// A configuration error: where (file and line, when known) and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    origin: String,
    line: Option<usize>,
    message: String,
}

impl ConfigError {
    pub(crate) fn new(origin: &str, line: Option<usize>, message: impl Into<String>) -> Self {
        ConfigError {
            origin: origin.to_owned(),
            line,
            message: message.into(),
        }
    }

    /// The 1-based line the error is on, when known.
    pub fn line(&self) -> Option<usize> {
        self.line
    }

    /// What is wrong, without the location.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{}: {}", self.origin, line, self.message),
            None => write!(f, "{}: {}", self.origin, self.message),
        }
    }
}

impl std::error::Error for ConfigError {}

/// The 1-based line of byte `offset` in `text`.
pub(crate) fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}
