//! Version 4 UUIDs as `urn:uuid:` URIs (message ids, subscription ids), from 16 bytes the
//! caller draws from its randomness — this crate does no I/O.

/// `bytes` as a `urn:uuid:` URI: the version (4) and variant (RFC 9562) bits set, in the
/// 8-4-4-4-12 lowercase hexadecimal form.
pub fn urn_uuid_v4(mut bytes: [u8; 16]) -> String {
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut urn = String::with_capacity("urn:uuid:".len() + 36);
    urn.push_str("urn:uuid:");
    for (i, b) in bytes.into_iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            urn.push('-');
        }
        urn.push(char::from(HEX[usize::from(b >> 4)]));
        urn.push(char::from(HEX[usize::from(b & 15)]));
    }
    urn
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sets_version_and_variant_bits_like_python_uuid() {
        // python3 -c "import uuid; print(uuid.UUID(bytes=bytes(range(16)), version=4))"
        let bytes: [u8; 16] = std::array::from_fn(|i| i as u8);
        assert_eq!(
            urn_uuid_v4(bytes),
            "urn:uuid:00010203-0405-4607-8809-0a0b0c0d0e0f"
        );
        // python3 -c "import uuid; print(uuid.UUID(bytes=b'\xff'*16, version=4))"
        assert_eq!(
            urn_uuid_v4([0xff; 16]),
            "urn:uuid:ffffffff-ffff-4fff-bfff-ffffffffffff"
        );
    }
}
