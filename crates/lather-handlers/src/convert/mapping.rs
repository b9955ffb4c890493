//! The renaming rules of `format-convert` and the file they are written in.
//!
//! One rule per line; blank lines and lines starting with `#` are skipped:
//!
//! ```text
//! namespace urn:old = urn:new                          # every name in urn:old moves to urn:new
//! element {urn:old}getQuote = {urn:new}GetQuote        # one element, by Clark name
//! attribute {urn:old}cur = {urn:new}currency           # one attribute, on any element
//! attribute ref = reference                            # unqualified: no namespace
//! ```
//!
//! An element or attribute rule wins over the namespace rule for its name. Rules apply once,
//! not in chains. Reversed, the table maps new names back to old ones.

use lather_envelope::XML_NS;
use std::collections::HashMap;
use std::fmt;

/// The namespace of `xmlns` attributes, which no rule may touch.
const XMLNS_NS: &str = "http://www.w3.org/2000/xmlns/";

/// A name in Clark notation, split: (namespace, local name); the namespace may be empty.
pub(crate) type Name = (String, String);

/// A rule file that could not be read: the line (1-based) and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MappingError {
    /// The line of the rule file.
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for MappingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

impl std::error::Error for MappingError {}

/// The renaming tables, in the direction they are applied.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Mapping {
    namespaces: HashMap<String, String>,
    elements: HashMap<String, HashMap<String, Name>>,
    attributes: HashMap<String, HashMap<String, Name>>,
}

/// Where each rule's source was first mapped, to name both lines of a duplicate.
#[derive(Default)]
struct Seen {
    namespaces: HashMap<String, usize>,
    elements: HashMap<Name, usize>,
    attributes: HashMap<Name, usize>,
}

impl Mapping {
    /// Reads the rules in `text`; with `reverse`, each rule maps its right side to its left.
    pub(crate) fn parse(text: &str, reverse: bool) -> Result<Mapping, MappingError> {
        let mut mapping = Mapping::default();
        let mut seen = Seen::default();
        for (i, line) in text.lines().enumerate() {
            let number = i + 1;
            let error = |message: String| MappingError {
                line: number,
                message,
            };
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let words: Vec<&str> = line.split_whitespace().collect();
            let [keyword, left, "=", right] = words[..] else {
                return Err(error(format!(
                    "expected `namespace|element|attribute OLD = NEW`, found {line:?}"
                )));
            };
            let (from, to) = if reverse {
                (right, left)
            } else {
                (left, right)
            };
            match keyword {
                "namespace" => {
                    for uri in [from, to] {
                        namespace_uri(uri).map_err(error)?;
                    }
                    first_time(&mut seen.namespaces, from.to_owned(), number).map_err(error)?;
                    mapping.namespaces.insert(from.to_owned(), to.to_owned());
                }
                "element" | "attribute" => {
                    let from = clark(from).map_err(error)?;
                    let to = clark(to).map_err(error)?;
                    let (seen, table) = if keyword == "element" {
                        (&mut seen.elements, &mut mapping.elements)
                    } else {
                        (&mut seen.attributes, &mut mapping.attributes)
                    };
                    first_time(seen, from.clone(), number).map_err(error)?;
                    table.entry(from.0).or_default().insert(from.1, to);
                }
                other => {
                    return Err(error(format!(
                        "unknown rule {other:?}; rules are namespace, element and attribute"
                    )));
                }
            }
        }
        Ok(mapping)
    }

    /// Whether the table renames nothing.
    pub(crate) fn is_empty(&self) -> bool {
        self.namespaces.is_empty() && self.elements.is_empty() && self.attributes.is_empty()
    }

    /// Where names in namespace `uri` (and declarations of it) go.
    pub(crate) fn namespace<'a>(&'a self, uri: &'a str) -> &'a str {
        self.namespaces.get(uri).map_or(uri, String::as_str)
    }

    /// The new name of element `{ns}local`.
    pub(crate) fn element<'a>(&'a self, ns: &'a str, local: &'a str) -> (&'a str, &'a str) {
        match self.elements.get(ns).and_then(|t| t.get(local)) {
            Some((ns, local)) => (ns, local),
            None => (self.namespace(ns), local),
        }
    }

    /// The new name of attribute `{ns}local` (an unqualified attribute has no namespace
    /// and keeps none unless a rule names it).
    pub(crate) fn attribute<'a>(&'a self, ns: &'a str, local: &'a str) -> (&'a str, &'a str) {
        match self.attributes.get(ns).and_then(|t| t.get(local)) {
            Some((ns, local)) => (ns, local),
            None => (self.namespace(ns), local),
        }
    }
}

/// Records `key` as mapped at `line`, or says where it already was.
fn first_time<K: std::hash::Hash + Eq>(
    seen: &mut HashMap<K, usize>,
    key: K,
    line: usize,
) -> Result<(), String> {
    if let Some(first) = seen.get(&key) {
        return Err(format!(
            "maps the same name as line {first}; a name can be mapped only once in this direction"
        ));
    }
    seen.insert(key, line);
    Ok(())
}

/// Checks a namespace URI of a `namespace` rule.
fn namespace_uri(uri: &str) -> Result<(), String> {
    if uri.contains(['{', '}', '<', '>', '"', '&']) {
        return Err(format!("{uri:?} is not a namespace URI"));
    }
    if uri == XML_NS || uri == XMLNS_NS {
        return Err(format!("the namespace {uri} cannot be renamed"));
    }
    Ok(())
}

/// Parses `{namespace}local` or `local` (no namespace).
fn clark(text: &str) -> Result<Name, String> {
    let (ns, local) = match text.strip_prefix('{') {
        Some(rest) => rest
            .split_once('}')
            .ok_or_else(|| format!("{text:?} is not a name; write {{namespace}}local"))?,
        None => ("", text),
    };
    if !is_ncname(local) {
        return Err(format!("{local:?} is not an XML local name"));
    }
    if !ns.is_empty() {
        namespace_uri(ns)?;
    } else if local == "xmlns" {
        return Err("xmlns is a namespace declaration, not a name".into());
    }
    Ok((ns.to_owned(), local.to_owned()))
}

/// Whether `s` is an XML name without a colon (NCName).
fn is_ncname(s: &str) -> bool {
    let mut chars = s.chars();
    let start_ok = chars.next().is_some_and(|c| c == '_' || c.is_alphabetic());
    start_ok && chars.all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | '\u{B7}'))
}

#[cfg(test)]
mod tests {
    use super::*;

    const RULES: &str = "# old to new\n\
        namespace urn:old = urn:new\n\
        \n\
        element {urn:old}getQuote = {urn:new}GetQuote\n\
        attribute ref = {urn:new}reference\n";

    #[test]
    fn reads_rules_and_applies_element_rules_before_namespace_rules() {
        let m = Mapping::parse(RULES, false).unwrap();
        assert_eq!(m.element("urn:old", "getQuote"), ("urn:new", "GetQuote"));
        assert_eq!(m.element("urn:old", "symbol"), ("urn:new", "symbol"));
        assert_eq!(m.element("urn:other", "x"), ("urn:other", "x"));
        assert_eq!(m.attribute("", "ref"), ("urn:new", "reference"));
        assert_eq!(m.attribute("", "id"), ("", "id"));
        assert_eq!(m.attribute("urn:old", "id"), ("urn:new", "id"));
    }

    #[test]
    fn reversed_rules_map_new_names_back() {
        let m = Mapping::parse(RULES, true).unwrap();
        assert_eq!(m.element("urn:new", "GetQuote"), ("urn:old", "getQuote"));
        assert_eq!(m.element("urn:new", "symbol"), ("urn:old", "symbol"));
        assert_eq!(m.attribute("urn:new", "reference"), ("", "ref"));
        assert_eq!(m.namespace("urn:old"), "urn:old");
    }

    #[test]
    fn bad_rules_name_their_line() {
        let err = |text: &str, reverse| Mapping::parse(text, reverse).unwrap_err();
        assert_eq!(err("\n\nrename a = b\n", false).line, 3);
        assert!(err("rename a = b", false).message.contains("unknown rule"));
        assert!(err("namespace a b", false).message.contains("expected"));
        assert!(
            err("element {urn:a}x = {urn:b}y z", false)
                .message
                .contains("expected")
        );
        assert!(
            err("element {urn:ax = y", false)
                .message
                .contains("not a name")
        );
        assert!(
            err("element {urn:a}1x = y", false)
                .message
                .contains("local name")
        );
        assert!(err("element a:b = y", false).message.contains("local name"));
        assert!(
            err(
                "namespace http://www.w3.org/XML/1998/namespace = urn:x",
                false
            )
            .message
            .contains("cannot be renamed")
        );
        assert!(
            err("attribute xmlns = x", false)
                .message
                .contains("declaration")
        );
        // Two rules for one source, in the direction applied.
        let twice = "namespace urn:a = urn:c\nnamespace urn:b = urn:c\n";
        assert!(Mapping::parse(twice, false).is_ok());
        let e = err(twice, true);
        assert_eq!(e.line, 2);
        assert!(e.message.contains("line 1"), "{}", e.message);
    }
}
