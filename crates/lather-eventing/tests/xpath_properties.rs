//! Generated XPath expressions and events (the fuzz target's invariants at lower volume):
//! compiling, the Subscribe cost check and budgeted evaluation never panic, and a verdict
//! reached within a budget is the same with a larger one.

use lather_eventing::xpath::{ParsedEvent, Verdict, XPathFilter};
use proptest::prelude::*;

const PIECES: &[&str] = &[
    "/",
    "//",
    "*",
    "ev:v",
    "e",
    "@a",
    ".",
    "..",
    "[",
    "]",
    "(",
    ")",
    "1",
    "2.5",
    "'x'",
    " = ",
    " != ",
    " < ",
    " >= ",
    " and ",
    " or ",
    " + ",
    " - ",
    " div ",
    " mod ",
    " | ",
    "count(",
    "contains(",
    "string(",
    "substring(",
    "position()",
    "last()",
    "not(",
    ",",
    "text()",
    "node()",
    "ancestor::",
    "following::",
    "preceding-sibling::",
    "sum(",
    "normalize-space(",
    "translate(",
    "name(",
    "local-name(",
    "round(",
];

fn expression() -> impl Strategy<Value = String> {
    proptest::collection::vec(proptest::sample::select(PIECES), 1..24).prop_map(|p| p.concat())
}

fn event() -> impl Strategy<Value = String> {
    (1usize..40, 1usize..4).prop_map(|(n, depth)| {
        let leaf = format!("<ev:v a=\"{n}\">{n}</ev:v>t");
        let mut inner = leaf.repeat(n);
        for _ in 0..depth {
            inner = format!("<e a=\"1\">{inner}</e>");
        }
        format!("<ev:r xmlns:ev=\"urn:ev\">{inner}</ev:r>")
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn evaluation_is_bounded_and_deterministic(expr in expression(), event in event()) {
        let namespaces = [("ev".to_owned(), "urn:ev".to_owned())];
        if let Ok(filter) = XPathFilter::compile(&expr, &namespaces) {
            let _ = filter.check_cost(5_000);
            let parsed = ParsedEvent::new(event.as_bytes());
            let small = filter.evaluate(&parsed, 5_000);
            if small != Verdict::OverBudget {
                prop_assert_eq!(filter.evaluate(&parsed, 50_000), small);
            }
        }
    }
}
