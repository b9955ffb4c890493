//! FNV-1a, the hasher of the small maps a request or a remote call looks keys up in
//! (services, operation labels, the reply routes of calls in flight), where SipHash's cost
//! shows. Their keys cannot flood them: services are configured, a service's operation
//! labels are capped by `[server] metrics_max_operations`, and a route's key is a counter
//! this process hands out.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// FNV-1a, 64 bits.
#[derive(Debug, Clone, Copy)]
pub struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Hasher for Fnv {
    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.0 = (self.0 ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3);
        }
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// A map hashed with [`Fnv`].
pub type FnvMap<K, V> = HashMap<K, V, BuildHasherDefault<Fnv>>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_as_published_and_maps_find_their_keys() {
        // The FNV-1a 64 test vectors for "" and "a".
        assert_eq!(Fnv::default().finish(), 0xcbf2_9ce4_8422_2325);
        let mut a = Fnv::default();
        a.write(b"a");
        assert_eq!(a.finish(), 0xaf63_dc4c_8601_ec8c);
        let mut map: FnvMap<String, u32> = FnvMap::default();
        map.insert("echo".into(), 1);
        map.insert("digest".into(), 2);
        assert_eq!(map.get("echo"), Some(&1));
        assert_eq!(map.get("digest"), Some(&2));
        assert_eq!(map.get("other"), None);
    }
}
