//! Arbitrary XPath expressions against arbitrary events: the expression is the input up to
//! its first NUL byte, the event the rest. Compiling, the cost check at Subscribe and the
//! budgeted evaluation never panic; a verdict reached within a budget is the same with a
//! larger one (evaluation is deterministic and the budget only ever stops it).

#![no_main]

use lather_eventing::xpath::{ParsedEvent, Verdict, XPathFilter};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let (expression, event) = match data.iter().position(|&b| b == 0) {
        Some(at) => (&data[..at], &data[at + 1..]),
        None => (data, &b"<ev:e xmlns:ev=\"urn:ev\" a=\"1\"><ev:v>2</ev:v>t</ev:e>"[..]),
    };
    let Ok(expression) = std::str::from_utf8(expression) else {
        return;
    };
    let namespaces = [("ev".to_owned(), "urn:ev".to_owned())];
    let Ok(filter) = XPathFilter::compile(expression, &namespaces) else {
        return;
    };
    let _ = filter.check_cost(20_000);
    let parsed = ParsedEvent::new(event);
    let small = filter.evaluate(&parsed, 20_000);
    if small != Verdict::OverBudget {
        assert_eq!(filter.evaluate(&parsed, 40_000), small);
    }
});
