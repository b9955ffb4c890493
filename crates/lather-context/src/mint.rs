//! Minting ids and owner tokens, and the clock: what the store and the registry share.

use sha2::{Digest, Sha256};
use std::time::{SystemTime, UNIX_EPOCH};

/// `bytes` as lowercase hexadecimal.
pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `N` bytes from the system's randomness.
///
/// # Panics
/// Without the system's randomness no id or token is safe to hand out; the engine
/// contains the panic as a failure of the request.
pub(crate) fn random<const N: usize>() -> [u8; N] {
    let mut bytes = [0u8; N];
    if let Err(e) = getrandom::fill(&mut bytes) {
        panic!("no randomness for an id or token: {e}");
    }
    bytes
}

/// A new `urn:uuid:` URI.
pub(crate) fn uuid_uri() -> String {
    lather_envelope::uuid::urn_uuid_v4(random::<16>())
}

/// A new owner token (48 hex digits) and the SHA-256 kept of it.
pub(crate) fn owner_token() -> (String, String) {
    let token = hex(&random::<24>());
    let hash = token_hash(&token);
    (token, hash)
}

/// The SHA-256 of `token`, hexadecimal: what a store keeps of it.
pub(crate) fn token_hash(token: &str) -> String {
    hex(&Sha256::digest(token.as_bytes()))
}

/// Milliseconds since the Unix epoch.
pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}
