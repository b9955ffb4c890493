//! Reading a configuration: the file, `${ENV}` substitution, the TOML, then the checks.

use crate::error::line_of;
use crate::{Config, ConfigError};
use std::path::Path;

impl Config {
    /// Reads and validates the file at `path`: a regular file of at most
    /// [`MAX_CONFIG_BYTES`](crate::MAX_CONFIG_BYTES). `${NAME}` in its values is replaced
    /// by the process environment's `NAME` first (see [`Config::from_toml_with_env`]).
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let origin = path.display().to_string();
        let text =
            crate::read::bounded(path).map_err(|why| ConfigError::new(&origin, None, why))?;
        Config::from_toml(&text, &origin)
    }

    /// Parses and validates `text`; `origin` names it in errors (usually the file path).
    /// `${NAME}` in its values is replaced by the process environment's `NAME` first.
    pub fn from_toml(text: &str, origin: &str) -> Result<Config, ConfigError> {
        Config::from_toml_with_env(text, origin, &|name| std::env::var(name).ok())
    }

    /// Parses and validates `text`, with `${NAME}` in its values replaced by `env(NAME)`
    /// first: `${NAME:-default}` gives a default for an unset (or empty) variable, `$${`
    /// writes a literal `${`, and an unset variable without a default is an error naming it
    /// and its line. The replacement is textual (a string value keeps its quotes around
    /// the `${…}`); keys, table headers and comments are left as written.
    ///
    /// ```
    /// let env = |name: &str| (name == "PORT").then(|| "9000".to_owned());
    /// let cfg = lather_config::Config::from_toml_with_env(
    ///     "[server]\nlisten = \"127.0.0.1:${PORT}\"\nmax_in_flight = ${MAX:-8}\n",
    ///     "inline",
    ///     &env,
    /// )
    /// .unwrap();
    /// assert_eq!(cfg.server.listen.port(), 9000);
    /// ```
    pub fn from_toml_with_env(
        text: &str,
        origin: &str,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Config, ConfigError> {
        let text = crate::substitute::substitute(text, origin, env)?;
        let text = text.as_ref();
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
