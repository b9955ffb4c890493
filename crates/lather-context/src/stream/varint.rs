//! Unsigned LEB128 integers: seven bits a byte, least significant group first, the high
//! bit set on every byte but the last. The stream format never needs more than 32 bits.

use super::WireError;
use bytes::BufMut;

/// Appends `value`.
pub(crate) fn put(out: &mut impl BufMut, mut value: u64) {
    while value >= 0x80 {
        out.put_u8((value as u8 & 0x7f) | 0x80);
        value >>= 7;
    }
    out.put_u8(value as u8);
}

/// Reads one integer from the front of `input`, advancing it; at most five bytes and at
/// most `u32::MAX`.
pub(crate) fn take(input: &mut &[u8]) -> Result<u32, WireError> {
    let mut value: u64 = 0;
    for (i, &byte) in input.iter().enumerate().take(5) {
        value |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            *input = &input[i + 1..];
            return u32::try_from(value).map_err(|_| WireError::Malformed("integer over 32 bits"));
        }
    }
    Err(if input.len() < 5 {
        WireError::Malformed("integer cut short")
    } else {
        WireError::Malformed("integer over 32 bits")
    })
}

/// `take` as a length or count, checked against what is left or a bound.
pub(crate) fn take_len(input: &mut &[u8]) -> Result<usize, WireError> {
    Ok(take(input)? as usize)
}

/// The bytes `put` writes for `value`.
pub(crate) fn size(value: u64) -> usize {
    let bits = 64 - (value | 1).leading_zeros() as usize;
    bits.div_ceil(7)
}

/// Splits `n` bytes off the front of `input`.
pub(crate) fn take_bytes<'a>(input: &mut &'a [u8], n: usize) -> Result<&'a [u8], WireError> {
    if input.len() < n {
        return Err(WireError::Malformed("field longer than its frame"));
    }
    let (head, rest) = input.split_at(n);
    *input = rest;
    Ok(head)
}

/// A length-prefixed byte string from the front of `input`.
pub(crate) fn take_string<'a>(input: &mut &'a [u8]) -> Result<&'a [u8], WireError> {
    let n = take_len(input)?;
    take_bytes(input, n)
}

/// Appends a length-prefixed byte string.
pub(crate) fn put_string(out: &mut impl BufMut, bytes: &[u8]) {
    put(out, bytes.len() as u64);
    out.put_slice(bytes);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_round_trip_in_the_fewest_bytes() {
        for value in [0u64, 1, 127, 128, 300, 16_383, 16_384, u32::MAX as u64] {
            let mut out = Vec::new();
            put(&mut out, value);
            assert_eq!(out.len(), size(value), "{value}");
            let mut input = &out[..];
            assert_eq!(take(&mut input).unwrap() as u64, value);
            assert!(input.is_empty());
        }
        let mut out = Vec::new();
        put(&mut out, 300);
        assert_eq!(out, [0xac, 0x02]);
    }

    #[test]
    fn cut_and_oversized_integers_are_refused() {
        assert!(take(&mut &[0x80u8, 0x80][..]).is_err());
        assert!(take(&mut &[0xffu8, 0xff, 0xff, 0xff, 0x7f][..]).is_err());
        assert!(take(&mut &[0xffu8, 0xff, 0xff, 0xff, 0xff, 0x01][..]).is_err());
    }
}
