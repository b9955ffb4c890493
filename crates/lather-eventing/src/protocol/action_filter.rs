//! The DPWS action filter dialect: a Filter listing `wsa:Action` URIs; an event is for the
//! subscription when its notification action is one of them or lies below one of them
//! (segment-wise prefix, as DPWS 1.1 §6.2.1 describes). IEEE 11073 SDC consumers (e.g. the
//! Python `sdc11073` package) subscribe only with this dialect.

use crate::protocol::problem::{Problem, Refusal, refuse};
use lather_envelope::{Element, QName};

/// The DPWS 1.1 (2009) action filter dialect.
pub const DPWS_ACTION_DIALECT: &str = "http://docs.oasis-open.org/ws-dd/ns/dpws/2009/01/Action";

/// The DPWS 1.0 (2006) action filter dialect, read the same way.
pub const DPWS06_ACTION_DIALECT: &str = "http://schemas.xmlsoap.org/ws/2006/02/devprof/Action";

/// Whether `filter` is in one of the action dialects.
pub(crate) fn is_action_filter(filter: &Element) -> bool {
    let dialect = filter.attribute(&QName::new("", "Dialect")).unwrap_or("");
    matches!(dialect.trim(), DPWS_ACTION_DIALECT | DPWS06_ACTION_DIALECT)
}

/// The action URIs an action filter lists (whitespace-separated); none is a fault.
pub(crate) fn actions(filter: &Element) -> Result<Vec<String>, Refusal> {
    let actions: Vec<String> = filter
        .text()
        .split_whitespace()
        .map(str::to_owned)
        .collect();
    if actions.is_empty() {
        return refuse(Problem::EmptyFilter, "the action filter names no action");
    }
    Ok(actions)
}

/// Whether the notification `action` is matched by `filter`: equal, or `filter` is a
/// prefix of it ending at a `/` boundary.
pub(crate) fn matches(filter: &str, action: &str) -> bool {
    match action.strip_prefix(filter) {
        Some("") => true,
        Some(rest) => filter.ends_with('/') || rest.starts_with('/'),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_action_matches_itself_and_what_lies_below_it_by_segment() {
        let base = "http://example.org/StateEventService";
        assert!(matches(base, base));
        assert!(matches(base, &format!("{base}/EpisodicMetricReport")));
        assert!(matches(&format!("{base}/"), &format!("{base}/X")));
        assert!(!matches(base, &format!("{base}Other")));
        assert!(!matches(&format!("{base}/X"), base));
    }
}
