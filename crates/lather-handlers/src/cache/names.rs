//! Operation and header names as the cache's settings write them: `"GetPrice"` (any
//! namespace), `"{urn:shop}GetPrice"` (exactly), or `"*"` (every operation).

use lather_envelope::QName;
use lather_pipeline::SettingsError;

/// A set of operations by name.
#[derive(Debug, Clone, Default)]
pub(crate) struct Operations {
    every: bool,
    names: Vec<Name>,
}

#[derive(Debug, Clone)]
enum Name {
    Local(String),
    Qualified(QName),
}

impl Operations {
    /// The set `names` write; `key` names the setting in errors.
    pub(crate) fn parse(key: &'static str, names: &[String]) -> Result<Self, SettingsError> {
        let mut set = Operations::default();
        for name in names {
            if name == "*" {
                set.every = true;
            } else if name.starts_with('{') {
                set.names.push(Name::Qualified(qualified(key, name)?));
            } else if valid_local(name) {
                set.names.push(Name::Local(name.clone()));
            } else {
                return Err(SettingsError::key(
                    key,
                    format!(
                        "{name:?} is not an operation name: write \"Name\", \"{{namespace}}Name\" or \"*\""
                    ),
                ));
            }
        }
        Ok(set)
    }

    /// Whether the set has no names at all.
    pub(crate) fn is_empty(&self) -> bool {
        !self.every && self.names.is_empty()
    }

    /// Whether `operation` is in the set.
    pub(crate) fn contains(&self, operation: &QName) -> bool {
        self.every
            || self.names.iter().any(|name| match name {
                Name::Local(local) => operation.local() == local,
                Name::Qualified(q) => q == operation,
            })
    }
}

/// `{namespace}local`, the only way a header block can be named.
pub(crate) fn qualified(key: &'static str, name: &str) -> Result<QName, SettingsError> {
    let parsed = name
        .strip_prefix('{')
        .and_then(|rest| rest.split_once('}'))
        .filter(|(ns, local)| !ns.is_empty() && valid_local(local));
    match parsed {
        Some((ns, local)) => Ok(QName::new(ns, local)),
        None => Err(SettingsError::key(
            key,
            format!("{name:?} is not a qualified name: write \"{{namespace}}Name\""),
        )),
    }
}

fn valid_local(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_alphabetic() || c == '_')
        && chars.all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(names: &[&str]) -> Operations {
        let names: Vec<String> = names.iter().map(|s| (*s).to_owned()).collect();
        Operations::parse("operations", &names).unwrap()
    }

    #[test]
    fn local_names_match_any_namespace_and_qualified_ones_only_theirs() {
        let ops = set(&["GetPrice", "{urn:a}GetStock"]);
        assert!(ops.contains(&QName::new("urn:x", "GetPrice")));
        assert!(ops.contains(&QName::new("urn:a", "GetStock")));
        assert!(!ops.contains(&QName::new("urn:b", "GetStock")));
        assert!(!ops.contains(&QName::new("urn:a", "SetPrice")));
        assert!(set(&["*"]).contains(&QName::new("urn:z", "Anything")));
        assert!(set(&[]).is_empty());
    }

    #[test]
    fn malformed_names_are_refused_by_key() {
        for bad in ["", "{urn:a}", "{}X", "{urn:a", "a b", "1x"] {
            let err = Operations::parse("never", &[bad.to_owned()]).unwrap_err();
            assert_eq!(err.setting(), Some("never"), "{bad:?}");
        }
        assert_eq!(
            qualified("key_headers", "Locale").unwrap_err().setting(),
            Some("key_headers")
        );
    }
}
