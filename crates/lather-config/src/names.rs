//! Bounds on the names and paths an operator gives: they become metric labels, log fields
//! and routing keys, so each is short and plain.

/// The longest service or handler name, in characters (all from `[A-Za-z0-9_.-]`).
pub const MAX_NAME_CHARS: usize = 128;

/// The longest service path, in bytes.
pub const MAX_PATH_BYTES: usize = 1024;

/// Why `name` cannot name a service or handler, if it cannot.
pub(crate) fn name_problem(name: &str) -> Option<String> {
    if name.is_empty() {
        return Some("must not be empty".to_owned());
    }
    if name.len() > MAX_NAME_CHARS {
        return Some(format!(
            "is {} characters long; a name has at most {MAX_NAME_CHARS}",
            name.len()
        ));
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-')))
    {
        return Some(format!(
            "{name:?} holds {c:?}; a name uses only letters, digits, '_', '.' and '-'"
        ));
    }
    None
}

/// Why `path` is too long to be a service path, if it is.
pub(crate) fn path_problem(path: &str) -> Option<String> {
    (path.len() > MAX_PATH_BYTES).then(|| {
        format!(
            "is {} bytes long; a path has at most {MAX_PATH_BYTES}",
            path.len()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_short_names_pass() {
        assert_eq!(name_problem("quotes-v2.eu_1"), None);
        assert_eq!(name_problem(&"a".repeat(MAX_NAME_CHARS)), None);
        assert!(name_problem("").is_some());
        assert!(
            name_problem(&"a".repeat(MAX_NAME_CHARS + 1))
                .unwrap()
                .contains("at most 128")
        );
        assert!(name_problem("a b").unwrap().contains("' '"));
        assert!(name_problem("é").is_some());
        assert_eq!(
            path_problem(&format!("/{}", "p".repeat(MAX_PATH_BYTES - 1))),
            None
        );
        assert!(path_problem(&format!("/{}", "p".repeat(MAX_PATH_BYTES))).is_some());
    }
}
