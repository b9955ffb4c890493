//! XPath 1.0 event filters: an expression evaluated with the event's root element as the
//! context node; the event is taken when the expression's `boolean()` value is true
//! (node-set non-empty, number neither 0 nor NaN, string non-empty).
//!
//! Evaluation is lather's own (`eval`: every axis but `namespace`, the core
//! function library but `id()` and `lang()`), over a small tree of the event, with a work
//! budget: each node an axis yields or a string-value reads is one visit, and an
//! evaluation that needs more than the budget stops — the event is then not taken. A filter
//! is checked at Subscribe against a worst-case event ([`CHECK_BREADTH`] × [`CHECK_DEPTH`],
//! every name test matching) and refused if it needs more than the budget there.
//! The expression is bounded too: [`MAX_EXPRESSION_BYTES`], [`MAX_NESTING`] brackets deep,
//! [`MAX_PREDICATE_NESTING`] predicates within predicates, [`MAX_OPERATORS`] operators, no
//! variables, every prefix declared.

mod error;
pub(crate) mod eval;
pub(crate) mod syntax;
pub(crate) mod tree;

pub use error::XPathError;
use eval::Eval;
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use syntax::{Expr, SyntaxError};
use tree::Tree;

/// The default of the most node visits one filter evaluation may make.
pub const DEFAULT_FILTER_BUDGET: u64 = 100_000;

/// The children per element of the worst-case event a filter is checked on at Subscribe.
pub const CHECK_BREADTH: usize = 10;

/// The element levels of the worst-case event a filter is checked on at Subscribe (with
/// [`CHECK_BREADTH`]: 111 elements, each with an attribute and a text node).
pub const CHECK_DEPTH: usize = 3;

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
/// Cheap to clone; `Send + Sync`. Equal filters have equal text and namespaces.
#[derive(Debug, Clone)]
pub struct XPathFilter {
    inner: Arc<Source>,
}

#[derive(Debug)]
struct Source {
    expression: String,
    namespaces: Vec<(String, String)>,
    parsed: Expr,
}

impl PartialEq for XPathFilter {
    fn eq(&self, other: &Self) -> bool {
        self.inner.expression == other.inner.expression
            && self.inner.namespaces == other.inner.namespaces
    }
}

impl Eq for XPathFilter {}

impl Hash for XPathFilter {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.inner.expression.hash(state);
        self.inner.namespaces.hash(state);
    }
}

/// An event parsed for XPath filters, shared by every filter evaluated on it.
#[derive(Debug)]
pub struct ParsedEvent {
    tree: Option<Tree>,
}

impl ParsedEvent {
    /// Reads `event_xml` (one element, standalone); an event that is not well-formed UTF-8
    /// XML, or larger than [`MAX_EVENT_BYTES`], is taken by no filter.
    pub fn new(event_xml: &[u8]) -> ParsedEvent {
        if event_xml.len() > MAX_EVENT_BYTES {
            tracing::warn!(
                bytes = event_xml.len(),
                "event too large for XPath filters: not taken"
            );
            return ParsedEvent { tree: None };
        }
        let tree = std::str::from_utf8(event_xml).ok().and_then(Tree::parse);
        ParsedEvent { tree }
    }
}

/// The outcome of one filter on one event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The expression's boolean value is true.
    Taken,
    /// It is false, or the event is unreadable.
    NotTaken,
    /// The evaluation needed more node visits than its budget: not taken.
    OverBudget,
}

impl XPathFilter {
    /// Checks `expr` (XPath 1.0) with `namespaces` as `(prefix, uri)` pairs: its size and
    /// nesting, its syntax, that every prefix it uses is declared and that it can be
    /// evaluated (functions known, arguments of the right types). The error says what is
    /// wrong.
    pub fn compile(expr: &str, namespaces: &[(String, String)]) -> Result<XPathFilter, XPathError> {
        let expression = expr.trim();
        if expression.is_empty() {
            return Err(XPathError::Empty);
        }
        if expression.len() > MAX_EXPRESSION_BYTES {
            return Err(XPathError::TooLong(expression.len(), MAX_EXPRESSION_BYTES));
        }
        let prefixes = scan(expression)?;
        for prefix in prefixes {
            if !namespaces.iter().any(|(p, _)| *p == prefix) {
                return Err(XPathError::UndeclaredPrefix(prefix));
            }
        }
        let parsed = syntax::parse(expression, namespaces).map_err(|e| match e {
            SyntaxError::Invalid(_) | SyntaxError::Unsupported(_) => {
                XPathError::Syntax(e.to_string())
            }
        })?;
        Ok(XPathFilter {
            inner: Arc::new(Source {
                expression: expression.to_owned(),
                namespaces: namespaces.to_vec(),
                parsed,
            }),
        })
    }

    /// The expression as given (trimmed).
    pub fn expression(&self) -> &str {
        &self.inner.expression
    }

    /// The `(prefix, uri)` pairs the expression's prefixes resolve in.
    pub fn namespaces(&self) -> &[(String, String)] {
        &self.inner.namespaces
    }

    /// Whether the event `event_xml` (one element, standalone) is taken, within
    /// [`DEFAULT_FILTER_BUDGET`] node visits: the expression's boolean value with the
    /// event's root element as context node. An event that is not well-formed UTF-8 XML,
    /// larger than [`MAX_EVENT_BYTES`], or needing more visits is not taken.
    pub fn matches(&self, event_xml: &[u8]) -> bool {
        self.evaluate(&ParsedEvent::new(event_xml), DEFAULT_FILTER_BUDGET) == Verdict::Taken
    }

    /// The filter's verdict on `event` within `budget` node visits.
    pub fn evaluate(&self, event: &ParsedEvent, budget: u64) -> Verdict {
        let Some(tree) = &event.tree else {
            return Verdict::NotTaken;
        };
        match Eval::new(tree, budget, false).boolean_of(&self.inner.parsed) {
            Ok(true) => Verdict::Taken,
            Ok(false) => Verdict::NotTaken,
            Err(_) => Verdict::OverBudget,
        }
    }

    /// Checks the filter's cost: evaluated on the worst-case event ([`CHECK_BREADTH`] ×
    /// [`CHECK_DEPTH`] elements, every name test matching), it must need at most `budget`
    /// node visits. Returns the visits it needs.
    pub fn check_cost(&self, budget: u64) -> Result<u64, XPathError> {
        thread_local! {
            static WORST: Tree = Tree::synthetic(CHECK_BREADTH, CHECK_DEPTH);
        }
        WORST.with(|tree| {
            let mut eval = Eval::new(tree, budget, true);
            match eval.boolean_of(&self.inner.parsed) {
                Ok(_) => Ok(budget - eval.left()),
                Err(_) => Err(XPathError::TooCostly(tree.nodes.len() / 3, budget)),
            }
        })
    }
}

/// Checks nesting and returns the prefixes `expression` uses (outside string literals).
fn scan(expression: &str) -> Result<Vec<String>, XPathError> {
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
                None => return Err(XPathError::UnterminatedString),
            },
            b'(' | b'[' => {
                open.push(b);
                if open.len() > MAX_NESTING {
                    return Err(XPathError::TooDeep(MAX_NESTING));
                }
                if open.iter().filter(|&&o| o == b'[').count() > MAX_PREDICATE_NESTING {
                    return Err(XPathError::PredicatesTooDeep(MAX_PREDICATE_NESTING));
                }
            }
            b')' | b']' => {
                let want = if b == b')' { b'(' } else { b'[' };
                if open.pop() != Some(want) {
                    return Err(XPathError::Unbalanced(b as char));
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
            return Err(XPathError::TooManyOperators(MAX_OPERATORS));
        }
    }
    if !open.is_empty() {
        return Err(XPathError::Unclosed);
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
        let refused = |expr: &str| XPathFilter::compile(expr, &ns()).unwrap_err().to_string();
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
                .to_string()
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

    /// An event of `n` nested-and-sibling elements (`<e><e/>…</e>`, `n` of them).
    fn wide_event(n: usize) -> String {
        format!("<e>{}</e>", "<e>1</e>".repeat(n - 1))
    }

    #[test]
    fn hostile_filters_fail_the_cost_check_and_ordinary_ones_pass() {
        let budget = DEFAULT_FILTER_BUDGET;
        for hostile in [
            "//*[//*[//*[//*]]]",
            "//*[//*[//*]]",
            "//node()[count(//node()) > 1][count(//node()) > 2]",
        ] {
            let filter = XPathFilter::compile(hostile, &[]).unwrap();
            let why = filter.check_cost(budget).unwrap_err().to_string();
            assert!(
                why.contains("too costly") && why.contains("filter_budget"),
                "{why}"
            );
        }
        for ordinary in [
            "ev:Value > 40",
            "//ev:Tag[. = 'b']",
            "contains(ev:Sensor, 'boiler') and @unit = 'C'",
            "boolean(//x)",
            "count(ev:Tag) = 2",
            "/ev:Reading/ev:Value[position() = last()]",
        ] {
            let filter = XPathFilter::compile(ordinary, &ns()).unwrap();
            let cost = filter
                .check_cost(budget)
                .unwrap_or_else(|e| panic!("{ordinary}: {e}"));
            assert!(cost < budget / 10, "{ordinary}: {cost}");
        }
    }

    #[test]
    fn an_evaluation_stops_at_its_budget() {
        let event = ParsedEvent::new(wide_event(300).as_bytes());
        let costly = XPathFilter::compile("//*[//*]", &[]).unwrap();
        // 300 elements, each looking at every node again: far more than 10 000 visits.
        assert_eq!(costly.evaluate(&event, 10_000), Verdict::OverBudget);
        assert!(!costly.matches(wide_event(2000).as_bytes()));
        // With room enough it is taken.
        assert_eq!(costly.evaluate(&event, 10_000_000), Verdict::Taken);
        let cheap = XPathFilter::compile("count(e) = 299", &[]).unwrap();
        assert_eq!(cheap.evaluate(&event, 10_000), Verdict::Taken);
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
