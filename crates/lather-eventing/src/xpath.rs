//! XPath 1.0 event filters: an expression evaluated with the event's root element as the
//! context node; the event is taken when the expression's `boolean()` value is true
//! (node-set non-empty, number neither 0 nor NaN, string non-empty).
//!
//! Evaluation is sxd-xpath's (all XPath 1.0 axes, the core library but `id()` and `lang()`), over
//! a sxd-document tree of the event. The event reaching it has already been read by
//! lather's own parser (no DOCTYPE, bounded depth); the expression is bounded here:
//! [`MAX_EXPRESSION_BYTES`], [`MAX_NESTING`] brackets deep, [`MAX_PREDICATE_NESTING`]
//! predicates within predicates (each nesting level can multiply the work by the event's
//! node count), [`MAX_OPERATORS`] operators, no variables, every prefix declared.

use std::sync::Arc;
use sxd_document::dom::Document;
use sxd_xpath::{Context, Factory, Value, XPath};

/// The longest expression accepted, in bytes.
pub const MAX_EXPRESSION_BYTES: usize = 4096;

/// The deepest nesting of parentheses and brackets accepted.
pub const MAX_NESTING: usize = 32;

/// The deepest nesting of predicates within predicates accepted (`a[b[c]]` is 2).
pub const MAX_PREDICATE_NESTING: usize = 3;

/// The most operators (`+ - * = < > | /`, `and`, `or`, `div`, `mod`) accepted: evaluation
/// recurses once per operator.
pub const MAX_OPERATORS: usize = 128;

/// The largest event an XPath filter is evaluated on; a larger one matches no XPath filter.
pub const MAX_EVENT_BYTES: usize = 1024 * 1024;

/// The XPath 1.0 dialect of WS-Eventing 2004/08 (its default).
pub const XPATH_DIALECT_2004: &str = "http://www.w3.org/TR/1999/REC-xpath-19991116";

/// The XPath 1.0 dialect of WS-Eventing 2011 (its default).
pub const XPATH_DIALECT_2011: &str = "http://www.w3.org/2011/03/ws-evt/Dialects/XPath10";

/// A checked XPath 1.0 filter: the expression and the namespaces its prefixes resolve in.
/// Cheap to clone; `Send + Sync`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct XPathFilter {
    inner: Arc<Source>,
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct Source {
    expression: String,
    namespaces: Vec<(String, String)>,
}

impl XPathFilter {
    /// Checks `expr` (XPath 1.0) with `namespaces` as `(prefix, uri)` pairs: its size and
    /// nesting, its syntax, that every prefix it uses is declared and that it evaluates
    /// (functions known, arguments of the right types). The error says what is wrong.
    pub fn compile(expr: &str, namespaces: &[(String, String)]) -> Result<XPathFilter, String> {
        let expression = expr.trim();
        if expression.is_empty() {
            return Err("the XPath expression is empty".into());
        }
        if expression.len() > MAX_EXPRESSION_BYTES {
            return Err(format!(
                "the XPath expression has {} bytes, more than {MAX_EXPRESSION_BYTES}",
                expression.len()
            ));
        }
        let prefixes = scan(expression)?;
        for prefix in prefixes {
            if !namespaces.iter().any(|(p, _)| *p == prefix) {
                return Err(format!("the XPath prefix {prefix:?} is not declared"));
            }
        }
        let filter = XPathFilter {
            inner: Arc::new(Source {
                expression: expression.to_owned(),
                namespaces: namespaces.to_vec(),
            }),
        };
        let xpath = filter.build()?;
        // A trial on a one-element event finds unknown functions, variables and type errors.
        let package = sxd_document::parser::parse("<e/>").map_err(|e| e.to_string())?;
        filter
            .evaluate(&xpath, &package.as_document())
            .map_err(|e| format!("the XPath expression cannot be evaluated: {e}"))?;
        Ok(filter)
    }

    /// The expression as given (trimmed).
    pub fn expression(&self) -> &str {
        &self.inner.expression
    }

    /// The `(prefix, uri)` pairs the expression's prefixes resolve in.
    pub fn namespaces(&self) -> &[(String, String)] {
        &self.inner.namespaces
    }

    /// Whether the event `event_xml` (one element, standalone) is taken: the expression's
    /// boolean value with the event's root element as context node. An event that is not
    /// well-formed UTF-8 XML, larger than [`MAX_EVENT_BYTES`], or on which evaluation fails
    /// is not taken.
    pub fn matches(&self, event_xml: &[u8]) -> bool {
        if event_xml.len() > MAX_EVENT_BYTES {
            tracing::warn!(
                bytes = event_xml.len(),
                "event too large for XPath filters: not taken"
            );
            return false;
        }
        let Ok(text) = std::str::from_utf8(event_xml) else {
            return false;
        };
        let Ok(package) = sxd_document::parser::parse(text) else {
            return false;
        };
        let Ok(xpath) = self.build() else {
            return false;
        };
        match self.evaluate(&xpath, &package.as_document()) {
            Ok(taken) => taken,
            Err(e) => {
                tracing::debug!(expression = %self.inner.expression, "XPath evaluation failed: {e}");
                false
            }
        }
    }

    fn build(&self) -> Result<XPath, String> {
        match Factory::new().build(&self.inner.expression) {
            Ok(Some(xpath)) => Ok(xpath),
            Ok(None) => Err("the XPath expression is empty".into()),
            Err(e) => Err(format!("the XPath expression is not valid: {e}")),
        }
    }

    /// The boolean value of `xpath` on `document`'s root element.
    fn evaluate(&self, xpath: &XPath, document: &Document<'_>) -> Result<bool, String> {
        let mut context = Context::new();
        for (prefix, uri) in &self.inner.namespaces {
            context.set_namespace(prefix, uri);
        }
        let root = document
            .root()
            .children()
            .into_iter()
            .find_map(|c| c.element())
            .ok_or("the event has no element")?;
        let value: Value<'_> = xpath.evaluate(&context, root).map_err(|e| e.to_string())?;
        Ok(value.boolean())
    }
}

/// Checks nesting and returns the prefixes `expression` uses (outside string literals).
fn scan(expression: &str) -> Result<Vec<String>, String> {
    let bytes = expression.as_bytes();
    let mut prefixes: Vec<String> = Vec::new();
    let mut open: Vec<u8> = Vec::new();
    let mut operators = 0usize;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        match b {
            b'\'' | b'"' => match bytes[i + 1..].iter().position(|&c| c == b) {
                Some(len) => i += len + 1,
                None => return Err("the XPath expression has an unterminated string".into()),
            },
            b'(' | b'[' => {
                open.push(b);
                if open.len() > MAX_NESTING {
                    return Err(format!(
                        "the XPath expression nests deeper than {MAX_NESTING} brackets"
                    ));
                }
                if open.iter().filter(|&&o| o == b'[').count() > MAX_PREDICATE_NESTING {
                    return Err(format!(
                        "the XPath expression nests predicates deeper than {MAX_PREDICATE_NESTING}"
                    ));
                }
            }
            b')' | b']' => {
                let want = if b == b')' { b'(' } else { b'[' };
                if open.pop() != Some(want) {
                    return Err(format!(
                        "the XPath expression has an unbalanced {:?}",
                        b as char
                    ));
                }
            }
            b'+' | b'-' | b'*' | b'=' | b'<' | b'>' | b'|' | b'/' => operators += 1,
            _ if is_name_start(b) => {
                let start = i;
                while i + 1 < bytes.len() && is_name_char(bytes[i + 1]) {
                    i += 1;
                }
                let name = &expression[start..=i];
                if matches!(name, "and" | "or" | "div" | "mod") {
                    operators += 1;
                }
                let colon = bytes.get(i + 1) == Some(&b':');
                let next = bytes.get(i + 2).copied();
                if colon && next.is_some_and(|n| n == b'*' || is_name_start(n)) {
                    if !prefixes.iter().any(|p| p == name) {
                        prefixes.push(name.to_owned());
                    }
                    i += 1; // the colon; the local part is scanned next
                } else if colon && next == Some(b':') {
                    i += 2; // an axis
                }
            }
            _ => {}
        }
        i += 1;
        if operators > MAX_OPERATORS {
            return Err(format!(
                "the XPath expression has more than {MAX_OPERATORS} operators"
            ));
        }
    }
    if !open.is_empty() {
        return Err("the XPath expression has an unclosed bracket".into());
    }
    Ok(prefixes)
}

fn is_name_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_' || b >= 0x80
}

fn is_name_char(b: u8) -> bool {
    is_name_start(b) || b.is_ascii_digit() || b == b'-' || b == b'.'
}

#[cfg(test)]
mod tests {
    use super::*;

    const EV: &str = "urn:ev";

    fn ns() -> Vec<(String, String)> {
        vec![("ev".to_owned(), EV.to_owned())]
    }

    fn takes(expr: &str, event: &str) -> bool {
        XPathFilter::compile(expr, &ns())
            .unwrap_or_else(|e| panic!("{expr}: {e}"))
            .matches(event.as_bytes())
    }

    const READING: &str = r#"<ev:Reading xmlns:ev="urn:ev" unit="C"><ev:Sensor>boiler-2</ev:Sensor><ev:Value>41.5</ev:Value><ev:Tag>a</ev:Tag><ev:Tag>b</ev:Tag></ev:Reading>"#;

    #[test]
    fn boolean_value_decides() {
        // node-sets: non-empty is true
        assert!(takes("ev:Sensor", READING));
        assert!(!takes("ev:Missing", READING));
        assert!(takes("self::ev:Reading", READING));
        assert!(takes("/ev:Reading/ev:Value", READING));
        // numbers: 0 and NaN are false
        assert!(takes("count(ev:Tag)", READING));
        assert!(!takes("count(ev:Missing)", READING));
        assert!(!takes("number('x')", READING));
        // strings: empty is false
        assert!(takes("string(ev:Sensor)", READING));
        assert!(!takes("string(ev:Missing)", READING));
    }

    #[test]
    fn comparisons_and_functions() {
        assert!(takes("ev:Value > 40", READING));
        assert!(!takes("ev:Value > 50", READING));
        assert!(takes("ev:Value = 41.5 and @unit = 'C'", READING));
        assert!(takes("count(ev:Tag) = 2", READING));
        assert!(takes("contains(ev:Sensor, 'boiler')", READING));
        assert!(!takes("starts-with(ev:Sensor, 'pump')", READING));
        assert!(takes("//ev:Tag[. = 'b']", READING));
        assert!(takes("ev:Tag[position() = last()] = 'b'", READING));
        assert!(takes("sum(ev:Value) * 2 = 83", READING));
    }

    #[test]
    fn prefixes_resolve_in_the_given_namespaces_not_the_events() {
        let other = r#"<x:Reading xmlns:x="urn:other"><x:Value>99</x:Value></x:Reading>"#;
        assert!(!takes("ev:Value > 1", other));
        let same_ns_other_prefix =
            r#"<r:Reading xmlns:r="urn:ev"><r:Value>99</r:Value></r:Reading>"#;
        assert!(takes("ev:Value > 1", same_ns_other_prefix));
    }

    #[test]
    fn bad_expressions_are_refused_with_a_reason() {
        let refused = |expr: &str| XPathFilter::compile(expr, &ns()).unwrap_err();
        assert!(refused("").contains("empty"));
        assert!(refused("ev:Value >").contains("not valid"));
        assert!(refused("nope:Value").contains("\"nope\""));
        assert!(refused("frobnicate(1)").contains("cannot be evaluated"));
        assert!(refused("$x").contains("cannot be evaluated"));
        assert!(refused("a[b[c[d[e]]]]").contains("predicates"));
        assert!(refused(&"(".repeat(40)).contains("brackets"));
        assert!(refused("'open").contains("unterminated"));
        assert!(refused(&"1".repeat(5000)).contains("bytes"));
    }

    #[test]
    fn prefixes_in_strings_and_axes_are_not_names() {
        assert!(takes("child::ev:Sensor", READING));
        assert!(takes("ev:Sensor != 'q:x'", READING));
        assert!(XPathFilter::compile("ancestor-or-self::*", &[]).is_ok());
    }

    #[test]
    fn the_deepest_expressions_allowed_evaluate_without_trouble() {
        // Evaluation recurses per operator and per bracket; at the limits it must fit the
        // 2 MiB stack of a test thread (tokio's workers have the same) in a debug build.
        let sums = format!("{}1", "1+".repeat(MAX_OPERATORS));
        assert!(takes(&sums, READING));
        let negations = format!("{}1", "-".repeat(MAX_OPERATORS));
        assert!(takes(&negations, READING));
        let steps = format!("ev:Reading{}", "/..".repeat(MAX_OPERATORS));
        assert!(!takes(&steps, READING));
        let deep = format!("{}1{}", "(".repeat(MAX_NESTING), ")".repeat(MAX_NESTING));
        assert!(takes(&deep, READING));
        let mixed = format!(
            "{}{}1",
            "(1 and ".repeat(MAX_NESTING),
            "-".repeat(MAX_OPERATORS - MAX_NESTING)
        );
        let mixed = format!("{mixed}{}", ")".repeat(MAX_NESTING));
        assert!(takes(&mixed, READING));
        let too_many = format!("{}1", "-".repeat(MAX_OPERATORS + 1));
        assert!(
            XPathFilter::compile(&too_many, &[])
                .unwrap_err()
                .contains("operators")
        );
    }

    #[test]
    fn unreadable_events_are_not_taken() {
        let filter = XPathFilter::compile("true()", &[]).unwrap();
        assert!(filter.matches(b"<e/>"));
        assert!(!filter.matches(b"<e>"));
        assert!(!filter.matches(&[0xff, 0xfe]));
        let mut big = b"<e>".to_vec();
        big.resize(MAX_EVENT_BYTES + 1, b'a');
        big.extend_from_slice(b"</e>");
        assert!(!filter.matches(&big));
    }

    #[test]
    fn filters_are_shareable() {
        fn assert_shareable<T: Send + Sync + Clone + 'static>() {}
        assert_shareable::<XPathFilter>();
        let a = XPathFilter::compile("ev:Value", &ns()).unwrap();
        assert_eq!(a.expression(), "ev:Value");
        assert_eq!(a.namespaces(), ns().as_slice());
    }
}
