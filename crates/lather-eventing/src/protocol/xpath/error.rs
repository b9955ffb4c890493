//! Why an XPath filter is refused.

/// An XPath filter refused at Subscribe: by [`super::XPathFilter::compile`] (its size,
/// nesting, syntax or prefixes) or [`super::XPathFilter::check_cost`] (its cost). The
/// `Display` text is the fault's reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum XPathError {
    /// The expression is empty.
    #[error("the XPath expression is empty")]
    Empty,
    /// The expression is longer than its limit (bytes, limit).
    #[error("the XPath expression has {0} bytes, more than {1}")]
    TooLong(usize, usize),
    /// A string literal is not closed.
    #[error("the XPath expression has an unterminated string")]
    UnterminatedString,
    /// Brackets nest deeper than the limit.
    #[error("the XPath expression nests deeper than {0} brackets")]
    TooDeep(usize),
    /// Predicates nest deeper than the limit.
    #[error("the XPath expression nests predicates deeper than {0}")]
    PredicatesTooDeep(usize),
    /// A closing bracket without its opening one.
    #[error("the XPath expression has an unbalanced {0:?}")]
    Unbalanced(char),
    /// A bracket left open.
    #[error("the XPath expression has an unclosed bracket")]
    Unclosed,
    /// More operators than the limit.
    #[error("the XPath expression has more than {0} operators")]
    TooManyOperators(usize),
    /// A prefix no namespace declaration binds.
    #[error("the XPath prefix {0:?} is not declared")]
    UndeclaredPrefix(String),
    /// Not XPath 1.0, or not something lather evaluates (the reason says which).
    #[error("{0}")]
    Syntax(String),
    /// The filter needs more node visits than the budget on the worst-case event
    /// (elements of that event, budget).
    #[error(
        "the XPath filter is too costly: on an event of {0} elements it needs more than {1} node visits (service key filter_budget)"
    )]
    TooCostly(usize, u64),
}
