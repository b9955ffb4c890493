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
    Ok(lather_envelope::uuid::urn_uuid_v4(bytes))
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
