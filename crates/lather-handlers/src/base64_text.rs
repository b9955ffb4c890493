//! Base64 as XML text carries it (an `xenc:CipherValue`, an `lc:Compressed` Body): the
//! standard alphabet with padding, whitespace between the characters ignored. Decoded
//! with SIMD (`base64-simd`); the scalar `base64` crate reads a value again only to say
//! where it is wrong.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use std::borrow::Cow;

/// XML whitespace, which a long base64 text may be broken by.
fn is_whitespace(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}

/// Whether `text` holds whitespace: looked at in blocks without stopping early, which the
/// compiler turns into vector instructions (a value is usually one unbroken run).
fn has_whitespace(text: &[u8]) -> bool {
    text.chunks(64)
        .any(|block| block.iter().fold(false, |seen, &b| seen | is_whitespace(b)))
}

/// `text` without its whitespace: borrowed when it has none.
fn without_whitespace(text: &[u8]) -> Cow<'_, [u8]> {
    if has_whitespace(text) {
        Cow::Owned(
            text.iter()
                .copied()
                .filter(|b| !is_whitespace(*b))
                .collect(),
        )
    } else {
        Cow::Borrowed(text)
    }
}

/// Decodes `text`, ignoring its whitespace (copied without it only when it has some).
/// Bits past the last byte must be zero and the length a whole number of quads, as the
/// `base64` crate's standard engine requires.
pub(crate) fn decode(text: &[u8]) -> Result<Vec<u8>, base64::DecodeError> {
    let base64 = without_whitespace(text);
    base64_simd::STANDARD
        .decode_to_vec(&base64)
        .map_err(|_| match STANDARD.decode(&base64) {
            Err(e) => e,
            // The two decoders agree on what is base64 (tested); should they not, the
            // value is refused all the same.
            Ok(_) => base64::DecodeError::InvalidPadding,
        })
}

/// The base64 of `bytes`.
pub(crate) fn encode(bytes: &[u8]) -> String {
    base64_simd::STANDARD.encode_to_string(bytes)
}

/// The base64 of `bytes`, appended to `out`.
pub(crate) fn encode_into(bytes: &[u8], out: &mut String) {
    base64_simd::STANDARD.encode_append(bytes, out);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_as_the_scalar_decoder_does_and_refuses_what_it_refuses() {
        // Every length around the SIMD blocks (and a long one), every padding.
        let bytes: Vec<u8> = (0..100_000u32).map(|i| (i * 7919 % 251) as u8).collect();
        for len in (0..200).chain([4095, 4096, 4097, 100_000]) {
            let encoded = STANDARD.encode(&bytes[..len]);
            assert_eq!(
                decode(encoded.as_bytes()).unwrap(),
                &bytes[..len],
                "length {len}"
            );
            let mut appended = String::from("x");
            encode_into(&bytes[..len], &mut appended);
            assert_eq!(appended[1..], encoded, "length {len}");
        }
        let long = STANDARD.encode(&bytes[..3000]).into_bytes();
        for at in [0, 31, 32, 1000, long.len() - 5] {
            for bad in [b'*', b'-', b'_', b'=', 0xc3] {
                let mut text = long.clone();
                text[at] = bad;
                assert!(decode(&text).is_err(), "{bad} at {at}");
                assert!(STANDARD.decode(&text).is_err(), "the scalar decoder agrees");
            }
        }
        // Bits past the end must be zero; the length must be a whole number of quads.
        for refused in [&b"QR=="[..], b"QUJ=", b"QUJD=", b"QQ", b"Q", b"===="] {
            assert!(decode(refused).is_err(), "{refused:?}");
            assert!(STANDARD.decode(refused).is_err(), "{refused:?}");
        }
        assert_eq!(decode(b"QQ==").unwrap(), b"A");
        assert_eq!(decode(b"").unwrap(), b"");
    }

    #[test]
    fn whitespace_is_found_in_any_block_of_a_long_value_and_taken_out() {
        let plain = vec![b'A'; 200];
        assert!(!has_whitespace(&plain));
        assert!(matches!(without_whitespace(&plain), Cow::Borrowed(_)));
        for at in [0, 63, 64, 130, 199] {
            for ws in [b' ', b'\t', b'\r', b'\n'] {
                let mut text = plain.clone();
                text[at] = ws;
                assert!(has_whitespace(&text), "{ws} at {at}");
                assert_eq!(without_whitespace(&text).len(), 199);
            }
        }
    }
}
