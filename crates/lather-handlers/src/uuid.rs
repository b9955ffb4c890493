//! Random (version 4) UUIDs as `urn:uuid:` URIs, for message identifiers.

use lather_envelope::{Fault, FaultKind};

/// A fresh `urn:uuid:` URI holding a version 4 UUID (RFC 9562 §5.4) made from 122 bits of
/// the operating system's randomness.
pub(crate) fn urn_uuid_v4() -> Result<String, Fault> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|e| {
        Fault::with_reason(
            FaultKind::Internal,
            format!("no randomness for a message id: {e}"),
        )
    })?;
    Ok(format!("urn:uuid:{}", format_v4(bytes)))
}

/// `bytes` with the version (4) and variant (RFC 9562) bits set, in the 8-4-4-4-12 lowercase
/// hexadecimal form.
fn format_v4(mut bytes: [u8; 16]) -> String {
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

/// Whether `text` is `urn:uuid:` and a version 4 UUID of the RFC 9562 variant, in lowercase.
#[cfg(test)]
pub(crate) fn is_urn_uuid_v4(text: &str) -> bool {
    let Some(uuid) = text.strip_prefix("urn:uuid:") else {
        return false;
    };
    let groups: Vec<&str> = uuid.split('-').collect();
    let lengths_ok = groups.iter().map(|g| g.len()).eq([8, 4, 4, 4, 12]);
    let hex_ok = groups
        .iter()
        .all(|g| g.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')));
    lengths_ok
        && hex_ok
        && groups[2].starts_with('4')
        && groups[3].starts_with(['8', '9', 'a', 'b'])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sets_version_and_variant_bits_like_python_uuid() {
        // python3 -c "import uuid; print(uuid.UUID(bytes=bytes(range(16)), version=4))"
        let bytes: [u8; 16] = std::array::from_fn(|i| i as u8);
        assert_eq!(format_v4(bytes), "00010203-0405-4607-8809-0a0b0c0d0e0f");
        // python3 -c "import uuid; print(uuid.UUID(bytes=b'\xff'*16, version=4))"
        assert_eq!(
            format_v4([0xff; 16]),
            "ffffffff-ffff-4fff-bfff-ffffffffffff"
        );
    }

    #[test]
    fn fresh_ids_are_v4_and_differ() {
        let a = urn_uuid_v4().unwrap();
        let b = urn_uuid_v4().unwrap();
        assert!(is_urn_uuid_v4(&a), "{a}");
        assert!(is_urn_uuid_v4(&b), "{b}");
        assert_ne!(a, b);
        assert!(!is_urn_uuid_v4(
            "urn:uuid:00010203-0405-1607-8809-0a0b0c0d0e0f"
        ));
    }
}
