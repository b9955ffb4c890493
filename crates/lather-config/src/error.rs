//! Configuration errors that point at the offending line: one problem, or every problem a
//! file has.

use std::fmt;

/// One problem in a configuration: where (file and line, when known) and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigIssue {
    origin: String,
    line: Option<usize>,
    message: String,
}

impl ConfigIssue {
    /// Where the text came from (usually the file path).
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// The 1-based line the problem is on, when known.
    pub fn line(&self) -> Option<usize> {
        self.line
    }

    /// What is wrong, without the location.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for ConfigIssue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{}: {}", self.origin, line, self.message),
            None => write!(f, "{}: {}", self.origin, self.message),
        }
    }
}

/// A configuration error: one [`ConfigIssue`] or more, in the order they were found.
///
/// A TOML syntax error stops reading at once (one issue); the semantic checks go on after
/// a problem where they can, so one error lists every problem they found. `Display` writes
/// one issue per line, each as `file:line: message`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// Never empty.
    issues: Vec<ConfigIssue>,
}

impl ConfigError {
    pub(crate) fn new(origin: &str, line: Option<usize>, message: impl Into<String>) -> Self {
        ConfigError {
            issues: vec![ConfigIssue {
                origin: origin.to_owned(),
                line,
                message: message.into(),
            }],
        }
    }

    /// The errors as one, in order; `None` when there are none.
    pub(crate) fn merge(errors: Vec<ConfigError>) -> Option<ConfigError> {
        let issues: Vec<ConfigIssue> = errors.into_iter().flat_map(|e| e.issues).collect();
        (!issues.is_empty()).then_some(ConfigError { issues })
    }

    /// The 1-based line of the first problem, when known.
    pub fn line(&self) -> Option<usize> {
        self.first().line
    }

    /// What the first problem is, without the location.
    pub fn message(&self) -> &str {
        &self.first().message
    }

    /// Every problem found, in order (at least one).
    pub fn issues(&self) -> &[ConfigIssue] {
        &self.issues
    }

    fn first(&self) -> &ConfigIssue {
        // `issues` is never empty: every constructor puts one in.
        &self.issues[0]
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, issue) in self.issues.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            issue.fmt(f)?;
        }
        Ok(())
    }
}

impl std::error::Error for ConfigError {}

/// Collects the problems of checks that go on after one fails.
#[derive(Debug, Default)]
pub(crate) struct Problems {
    found: Vec<ConfigError>,
}

impl Problems {
    /// Keeps `result`'s error, if any.
    pub(crate) fn check(&mut self, result: Result<(), ConfigError>) {
        if let Err(e) = result {
            self.found.push(e);
        }
    }

    /// The value of `result`, keeping its error (then `None`).
    pub(crate) fn keep<T>(&mut self, result: Result<T, ConfigError>) -> Option<T> {
        result.map_err(|e| self.found.push(e)).ok()
    }

    /// Whether nothing was found so far.
    pub(crate) fn is_empty(&self) -> bool {
        self.found.is_empty()
    }

    /// `Ok` when nothing was found, else every problem as one error.
    pub(crate) fn finish(self) -> Result<(), ConfigError> {
        match ConfigError::merge(self.found) {
            None => Ok(()),
            Some(e) => Err(e),
        }
    }
}

/// The 1-based line of byte `offset` in `text`.
pub(crate) fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// The 1-based line where `key` is set in the table `[table]` of `text`, for keys read
/// without their span. Found by the text alone: `key = …` on a line of its own after the
/// table's header (or `table.key = …` at the top).
pub(crate) fn line_of_key(text: &str, table: &str, key: &str) -> Option<usize> {
    let sets = |line: &str, key: &str| {
        line.strip_prefix(key)
            .is_some_and(|rest| rest.trim_start().starts_with('='))
    };
    let dotted = format!("{table}.{key}");
    let mut current = String::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if let Some(header) = line.strip_prefix('[') {
            current = header
                .split(']')
                .next()
                .unwrap_or_default()
                .trim()
                .to_owned();
            continue;
        }
        if (current == table && sets(line, key)) || (current.is_empty() && sets(line, &dotted)) {
            return Some(n + 1);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merged_errors_list_every_issue_one_per_line() {
        let merged = ConfigError::merge(vec![
            ConfigError::new("a.toml", Some(3), "first"),
            ConfigError::new("a.toml", None, "second"),
        ])
        .unwrap();
        assert_eq!(merged.issues().len(), 2);
        assert_eq!(merged.line(), Some(3));
        assert_eq!(merged.message(), "first");
        assert_eq!(merged.to_string(), "a.toml:3: first\na.toml: second");
        assert_eq!(merged.issues()[1].line(), None);
        assert_eq!(merged.issues()[1].origin(), "a.toml");
        assert!(ConfigError::merge(Vec::new()).is_none());
    }

    #[test]
    fn keys_are_found_in_their_table() {
        let text = "server.workers = 2\n[nats]\nmax_depth = 1\n[server]\nmax_depth_x = 1\n max_depth = 2\n";
        assert_eq!(line_of_key(text, "server", "max_depth"), Some(6));
        assert_eq!(line_of_key(text, "server", "workers"), Some(1));
        assert_eq!(line_of_key(text, "nats", "max_depth"), Some(3));
        assert_eq!(line_of_key(text, "server", "listen"), None);
    }
}
