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
    let id_bytes = id.to_be_bytes();
    let attempt_bytes = attempt.to_be_bytes();
    for part in [&id_bytes[..], handler.as_bytes(), &attempt_bytes[..]] {
        for &b in part {
            span ^= u64::from(b);
            span = span.wrapping_mul(FNV_PRIME);
        }
    }
    // Written digit by digit into place: the formatting machinery costs more than the
    // hashing.
    let mut header = *b"00-________________________________-________________-01";
    write_hex(&mut header[3..35], id.max(1));
    write_hex(&mut header[36..52], u128::from(span.max(1)));
    String::from_utf8(header.to_vec()).unwrap_or_default()
}

/// Writes the low `out.len()` hex digits of `value` into `out` (lower case, leading zeros
/// kept).
fn write_hex(out: &mut [u8], value: u128) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut rest = value;
    for digit in out.iter_mut().rev() {
        *digit = HEX[(rest & 0xf) as usize];
        rest >>= 4;
    }
}

/// The trace id (32 hex digits) of a `traceparent`, if it is one of version `00`.
pub fn trace_id(traceparent: &str) -> Option<&str> {
    // `00-` 32 hex digits `-` 16 hex digits `-` 2 hex digits: 55 bytes, dashes in place.
    let b = traceparent.as_bytes();
    let hex = |range: std::ops::Range<usize>| b[range].iter().all(u8::is_ascii_hexdigit);
    (b.len() == 55
        && b.starts_with(b"00-")
        && b[35] == b'-'
        && b[52] == b'-'
        && hex(3..35)
        && hex(36..52)
        && hex(53..55))
    .then(|| &traceparent[3..35])
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
    fn the_header_is_written_as_the_formatter_writes_it() {
        for (id, handler, attempt) in [
            (1_u128, "h", 0_u32),
            (u128::MAX, "auth", 7),
            (0x0123_4567_89ab_cdef_0011_2233_4455_6677, "logging", 1),
            (0xf0, "x", u32::MAX),
        ] {
            let header = traceparent(id, handler, attempt);
            let span = u64::from_str_radix(&header[36..52], 16).unwrap();
            assert_eq!(header, format!("00-{id:032x}-{span:016x}-01"));
        }
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
