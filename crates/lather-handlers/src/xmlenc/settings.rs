//! The settings `encrypt` and `decrypt` share: the key file and the header name.

use super::key::EncryptionKey;
use lather_envelope::QName;
use lather_pipeline::SettingsError;

/// The key in the file at `path` (raw bytes or a hex line); an error names `key_file`.
pub(crate) fn load_key(path: &str) -> Result<EncryptionKey, SettingsError> {
    let error = |why: String| SettingsError::key("key_file", format!("{path}: {why}"));
    let contents = std::fs::read(path).map_err(|e| error(format!("cannot read: {e}")))?;
    EncryptionKey::from_file_contents(&contents).map_err(|e| error(e.to_string()))
}

/// The `header` setting as a name, if given: Clark notation (`{urn:ns}Local`) with a
/// namespace.
pub(crate) fn header_name(header: Option<&str>) -> Result<Option<QName>, SettingsError> {
    let Some(text) = header else {
        return Ok(None);
    };
    let named = text
        .strip_prefix('{')
        .and_then(|rest| rest.split_once('}'))
        .filter(|(ns, local)| {
            !ns.is_empty() && !local.is_empty() && !local.contains([':', '{', '}', ' '])
        });
    match named {
        Some((ns, local)) => Ok(Some(QName::new(ns, local))),
        None => Err(SettingsError::key(
            "header",
            format!("{text:?} is not a header name like \"{{urn:ns}}Local\""),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_names_need_a_namespace_and_a_plain_local_name() {
        assert_eq!(
            header_name(Some("{urn:a}B")).unwrap(),
            Some(QName::new("urn:a", "B"))
        );
        assert_eq!(header_name(None).unwrap(), None);
        for bad in ["B", "{}B", "{urn:a}", "{urn:a}b:c", "{urn:a"] {
            let err = header_name(Some(bad)).unwrap_err();
            assert_eq!(err.setting(), Some("header"), "{bad}");
        }
    }
}
