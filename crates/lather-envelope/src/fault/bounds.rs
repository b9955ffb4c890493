//! The bounds every fault lather writes stays within, whatever the request held: a fault
//! must never cost more than a small constant to render, or a hostile request could turn a
//! small message into a huge answer.

use std::borrow::Cow;

/// Longest reason text kept, in bytes; a longer one is cut on a character boundary and
/// ends with `…`.
pub const MAX_REASON_BYTES: usize = 1024;

/// Most header blocks a MustUnderstand fault lists as `env:NotUnderstood`; the reason says
/// how many more there were.
pub const MAX_NOT_UNDERSTOOD: usize = 16;

/// Most bytes of names (each distinct namespace counted once, plus every local name) the
/// `env:NotUnderstood` list may hold; a block that does not fit is counted as "more".
pub const MAX_NOT_UNDERSTOOD_BYTES: usize = 4096;

/// Most bytes of extra detail elements ([`Fault::with_detail`](super::Fault::with_detail));
/// elements that would go beyond it are left out whole.
pub const MAX_DETAIL_BYTES: usize = 8192;

/// Longest URI or identifier copied into a fault (`wsa:Action`, `wsa:RelatesTo`,
/// `wsa:ProblemHeaderQName`); a longer one is left out rather than cut into a wrong value.
pub const MAX_URI_BYTES: usize = 2048;

/// `reason` cut to at most [`MAX_REASON_BYTES`] bytes (the `…` included).
pub(super) fn cap_reason(reason: Cow<'static, str>) -> Cow<'static, str> {
    if reason.len() <= MAX_REASON_BYTES {
        return reason;
    }
    const ELLIPSIS: &str = "…";
    let cut = reason.floor_char_boundary(MAX_REASON_BYTES - ELLIPSIS.len());
    let mut kept = String::with_capacity(cut + ELLIPSIS.len());
    kept.push_str(&reason[..cut]);
    kept.push_str(ELLIPSIS);
    Cow::Owned(kept)
}

/// `value` if it is short enough to copy into a fault.
pub(super) fn short_uri(value: &str) -> Option<&str> {
    (value.len() <= MAX_URI_BYTES).then_some(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_reasons_are_cut_on_a_char_boundary() {
        let short = Cow::Borrowed("fine");
        assert_eq!(cap_reason(short), "fine");
        let long: String = "é".repeat(MAX_REASON_BYTES);
        let cut = cap_reason(Cow::Owned(long));
        assert!(cut.len() <= MAX_REASON_BYTES, "{}", cut.len());
        assert!(cut.ends_with('…'));
        assert!(cut.trim_end_matches('…').chars().all(|c| c == 'é'));
    }
}
