//! Byte search tuned for what a SOAP parser mostly searches: short names, values and text
//! runs. `memchr`'s vector search pays a call and a setup that outweigh scanning a dozen
//! bytes, so the first [`SHORT`] bytes are searched eight at a time in a register, and only
//! longer haystacks go to `memchr`.

use memchr::memchr;

/// Bytes searched in registers before handing over to `memchr`.
const SHORT: usize = 32;
const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// Where `needle` first occurs in `hay`.
#[inline]
pub(crate) fn find_byte(needle: u8, hay: &[u8]) -> Option<usize> {
    let pattern = ONES * u64::from(needle);
    let mut at = 0;
    while let Some(eight) = hay.get(at..at + 8) {
        if at >= SHORT {
            return memchr(needle, &hay[at..]).map(|i| at + i);
        }
        let mut word = [0u8; 8];
        word.copy_from_slice(eight);
        let diff = u64::from_le_bytes(word) ^ pattern;
        // A byte of `diff` is zero where `needle` is; the lowest flagged byte is the first
        // zero byte exactly (borrows only flag bytes above a true zero).
        let zero = diff.wrapping_sub(ONES) & !diff & HIGHS;
        if zero != 0 {
            return Some(at + (zero.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    hay[at..].iter().position(|&b| b == needle).map(|i| at + i)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn finds_the_first_occurrence_at_every_position_and_length() {
        for len in 0..80 {
            for at in 0..len {
                let mut hay = vec![b'a'; len];
                hay[at] = b'<';
                if at + 3 < len {
                    hay[at + 3] = b'<';
                }
                assert_eq!(find_byte(b'<', &hay), Some(at), "len {len} at {at}");
            }
            assert_eq!(find_byte(b'<', &vec![b'a'; len]), None, "len {len}");
        }
    }

    #[test]
    fn bytes_next_to_the_needle_do_not_count() {
        // One above and one below the needle, and the needle's borrow neighbours.
        let hay = [b';', b'=', 0x00, 0xFF, 0x3B, 0x3D, 0xBC, 0x3C];
        assert_eq!(find_byte(b'<', &hay), Some(7));
        assert_eq!(find_byte(0x00, &[1, 2, 0x80, 0, 0]), Some(3));
        assert_eq!(find_byte(0xFF, &[0xFE, 0x7F, 0xFF]), Some(2));
    }

    proptest! {
        #[test]
        fn agrees_with_memchr(hay in proptest::collection::vec(any::<u8>(), 0..200), needle: u8) {
            prop_assert_eq!(find_byte(needle, &hay), memchr(needle, &hay));
        }
    }
}
