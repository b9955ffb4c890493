//! W3C Trace Context for remote calls: the message id is the trace id, so a service's and its
//! workers' logs of one message share it.

/// The `traceparent` (W3C Trace Context level 1) of call `attempt` of handler `handler` on
/// message `id`: version `00`, the message id as the 32-hex-digit trace id, a span id derived
/// from the handler and attempt, and the sampled flag.
///
/// The span id is a 64-bit FNV-1a hash of the id, the handler name and the attempt, so every
/// call has its own and a retry differs from the first call. Neither id may be all zeros
/// (the spec makes such a header invalid); a zero is replaced by 1.
pub fn traceparent(id: u128, handler: &str, attempt: u32) -> String {
    const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;
    let mut span = FNV_OFFSET;
    let bytes = id
        .to_be_bytes()
        .into_iter()
        .chain(handler.bytes())
        .chain(attempt.to_be_bytes());
    for b in bytes {
        span ^= u64::from(b);
        span = span.wrapping_mul(FNV_PRIME);
    }
    format!("00-{:032x}-{:016x}-01", id.max(1), span.max(1))
}

/// The trace id (32 hex digits) of a `traceparent`, if it is one of version `00`.
pub fn trace_id(traceparent: &str) -> Option<&str> {
    let mut parts = traceparent.split('-');
    let (version, trace, span, flags) =
        (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    let hex = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_hexdigit());
    (version == "00" && hex(trace, 32) && hex(span, 16) && hex(flags, 2) && parts.next().is_none())
        .then_some(trace)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_trace_id_is_the_message_id_and_each_attempt_has_its_own_span() {
        let first = traceparent(0x0123_4567_89ab_cdef_0011_2233_4455_6677, "auth", 0);
        let retry = traceparent(0x0123_4567_89ab_cdef_0011_2233_4455_6677, "auth", 1);
        assert_eq!(trace_id(&first), Some("0123456789abcdef0011223344556677"));
        assert_eq!(trace_id(&retry), trace_id(&first));
        assert_ne!(first, retry);
        assert!(first.starts_with("00-") && first.ends_with("-01"));
        assert_eq!(first.len(), 55);
    }

    #[test]
    fn a_zero_message_id_still_gives_a_valid_header() {
        let header = traceparent(0, "h", 0);
        assert_eq!(trace_id(&header), Some("00000000000000000000000000000001"));
    }

    #[test]
    fn malformed_headers_have_no_trace_id() {
        for bad in [
            "",
            "00-abc-def-01",
            "01-0123456789abcdef0011223344556677-0123456789abcdef-01",
            "00-0123456789abcdef0011223344556677-0123456789abcdef-01-x",
        ] {
            assert_eq!(trace_id(bad), None, "{bad}");
        }
    }
}
