//! Reading a configuration: the file, the TOML, then the checks.

use crate::error::line_of;
use crate::{Config, ConfigError};
use std::path::Path;

impl Config {
    /// Reads and validates the file at `path`: a regular file of at most
    /// [`MAX_CONFIG_BYTES`](crate::MAX_CONFIG_BYTES).
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let origin = path.display().to_string();
        let text =
            crate::read::bounded(path).map_err(|why| ConfigError::new(&origin, None, why))?;
        Config::from_toml(&text, &origin)
    }

    /// Parses and validates `text`; `origin` names it in errors (usually the file path).
    pub fn from_toml(text: &str, origin: &str) -> Result<Config, ConfigError> {
        let mut config: Config = toml::from_str(text).map_err(|e| {
            let line = e.span().map(|s| line_of(text, s.start));
            let mut message = e.message().trim().to_owned();
            if let Some(source) = line.and_then(|l| text.lines().nth(l - 1)).map(str::trim)
                && !source.is_empty()
            {
                message = format!("{message} (at `{source}`)");
            }
            ConfigError::new(origin, line, message)
        })?;
        crate::validate::validate(&mut config, text, origin)?;
        config.source = (origin.to_owned(), text.to_owned());
        Ok(config)
    }
}
