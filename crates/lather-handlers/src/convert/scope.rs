//! Namespace bindings in scope while streaming through elements.

use lather_envelope::XML_NS;

/// Prefix → URI bindings, innermost last, in frames that open and close with elements.
#[derive(Debug, Clone, Default)]
pub(crate) struct Scope {
    bindings: Vec<(String, String)>,
    frames: Vec<usize>,
}

impl Scope {
    /// A scope holding `bindings` (outermost first) outside any element.
    pub(crate) fn new(bindings: Vec<(String, String)>) -> Self {
        Scope {
            bindings,
            frames: Vec::new(),
        }
    }

    /// Opens an element's frame.
    pub(crate) fn open(&mut self) {
        self.frames.push(self.bindings.len());
    }

    /// Closes the innermost element's frame, dropping its bindings.
    pub(crate) fn close(&mut self) {
        let start = self.frames.pop().unwrap_or(0);
        self.bindings.truncate(start);
    }

    /// Binds `prefix` (empty: the default namespace) to `uri` in the innermost frame,
    /// replacing a binding that frame already made.
    pub(crate) fn bind(&mut self, prefix: &str, uri: &str) {
        let start = self.frames.last().copied().unwrap_or(0);
        if let Some(b) = self.bindings[start..].iter_mut().find(|(p, _)| p == prefix) {
            b.1 = uri.to_owned();
        } else {
            self.bindings.push((prefix.to_owned(), uri.to_owned()));
        }
    }

    /// The URI `prefix` is bound to: `xml` always to the XML namespace, the default
    /// namespace to `""` when undeclared; `None` for an undeclared prefix.
    pub(crate) fn uri(&self, prefix: &str) -> Option<&str> {
        if prefix == "xml" {
            return Some(XML_NS);
        }
        let bound = self.bindings.iter().rev().find(|(p, _)| p == prefix);
        match bound {
            Some((_, uri)) => Some(uri),
            None if prefix.is_empty() => Some(""),
            None => None,
        }
    }

    /// A prefix bound to `uri` and not shadowed, innermost first; the default namespace
    /// only if `default_ok` (attributes cannot use it).
    pub(crate) fn prefix_for(&self, uri: &str, default_ok: bool) -> Option<&str> {
        if uri == XML_NS {
            return Some("xml");
        }
        self.bindings
            .iter()
            .rev()
            .filter(|(p, u)| u == uri && (default_ok || !p.is_empty()))
            .map(|(p, _)| p.as_str())
            .find(|p| self.uri(p) == Some(uri))
    }

    /// A prefix `nsN` bound nowhere in the scope and not in `taken`.
    pub(crate) fn fresh_prefix(&self, taken: &[String]) -> String {
        (0..)
            .map(|i| format!("ns{i}"))
            .find(|p| !taken.contains(p) && self.bindings.iter().all(|(b, _)| b != p))
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inner_bindings_shadow_outer_ones_until_closed() {
        let mut s = Scope::new(vec![("a".into(), "urn:1".into())]);
        assert_eq!(s.uri(""), Some(""));
        assert_eq!(s.uri("b"), None);
        s.open();
        s.bind("a", "urn:2");
        s.bind("", "urn:1");
        assert_eq!(s.uri("a"), Some("urn:2"));
        assert_eq!(s.prefix_for("urn:1", true), Some(""));
        assert_eq!(s.prefix_for("urn:1", false), None, "a is shadowed");
        assert_eq!(s.fresh_prefix(&["ns0".into()]), "ns1");
        s.close();
        assert_eq!(s.uri("a"), Some("urn:1"));
        assert_eq!(s.prefix_for("urn:1", false), Some("a"));
        assert_eq!(s.uri("xml"), Some(XML_NS));
    }
}
