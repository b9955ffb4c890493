//! The block encryption algorithms lather speaks, by URI (in messages) and by name (in
//! configuration).

/// The XML Encryption 1.0 namespace (`xenc`): the elements, and the CBC algorithm URIs.
pub const XENC_NS: &str = "http://www.w3.org/2001/04/xmlenc#";

/// The XML Encryption 1.1 namespace, home of the GCM algorithm URIs.
pub const XENC11_NS: &str = "http://www.w3.org/2009/xmlenc11#";

/// A block encryption algorithm of XML Encryption.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EncryptionAlgorithm {
    /// AES-128 in GCM: 12-byte IV, 16-byte tag, authenticated.
    Aes128Gcm,
    /// AES-256 in GCM: 12-byte IV, 16-byte tag, authenticated.
    Aes256Gcm,
    /// AES-128 in CBC with ISO 10126 padding: not authenticated.
    Aes128Cbc,
    /// AES-256 in CBC with ISO 10126 padding: not authenticated.
    Aes256Cbc,
}

/// Whether the algorithm authenticates (GCM) or only hides (CBC).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    Gcm,
    Cbc,
}

impl EncryptionAlgorithm {
    /// Every algorithm, GCM first.
    pub const ALL: [EncryptionAlgorithm; 4] = [
        EncryptionAlgorithm::Aes128Gcm,
        EncryptionAlgorithm::Aes256Gcm,
        EncryptionAlgorithm::Aes128Cbc,
        EncryptionAlgorithm::Aes256Cbc,
    ];

    /// The configuration name: `aes128-gcm`, `aes256-gcm`, `aes128-cbc` or `aes256-cbc`
    /// (the URI's fragment).
    pub fn name(self) -> &'static str {
        match self {
            EncryptionAlgorithm::Aes128Gcm => "aes128-gcm",
            EncryptionAlgorithm::Aes256Gcm => "aes256-gcm",
            EncryptionAlgorithm::Aes128Cbc => "aes128-cbc",
            EncryptionAlgorithm::Aes256Cbc => "aes256-cbc",
        }
    }

    /// The `xenc:EncryptionMethod/@Algorithm` URI.
    pub fn uri(self) -> &'static str {
        match self {
            EncryptionAlgorithm::Aes128Gcm => "http://www.w3.org/2009/xmlenc11#aes128-gcm",
            EncryptionAlgorithm::Aes256Gcm => "http://www.w3.org/2009/xmlenc11#aes256-gcm",
            EncryptionAlgorithm::Aes128Cbc => "http://www.w3.org/2001/04/xmlenc#aes128-cbc",
            EncryptionAlgorithm::Aes256Cbc => "http://www.w3.org/2001/04/xmlenc#aes256-cbc",
        }
    }

    /// The algorithm configured as `name`.
    pub fn from_name(name: &str) -> Option<EncryptionAlgorithm> {
        Self::ALL.into_iter().find(|a| a.name() == name)
    }

    /// The algorithm a message names by `uri`.
    pub fn from_uri(uri: &str) -> Option<EncryptionAlgorithm> {
        Self::ALL.into_iter().find(|a| a.uri() == uri)
    }

    /// The key length it needs, in bytes.
    pub fn key_len(self) -> usize {
        match self {
            EncryptionAlgorithm::Aes128Gcm | EncryptionAlgorithm::Aes128Cbc => 16,
            EncryptionAlgorithm::Aes256Gcm | EncryptionAlgorithm::Aes256Cbc => 32,
        }
    }

    pub(crate) fn mode(self) -> Mode {
        match self {
            EncryptionAlgorithm::Aes128Gcm | EncryptionAlgorithm::Aes256Gcm => Mode::Gcm,
            EncryptionAlgorithm::Aes128Cbc | EncryptionAlgorithm::Aes256Cbc => Mode::Cbc,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_end_in_the_name_and_live_in_their_namespace() {
        for a in EncryptionAlgorithm::ALL {
            assert!(a.uri().ends_with(&format!("#{}", a.name())), "{a:?}");
            let ns = match a.mode() {
                Mode::Gcm => XENC11_NS,
                Mode::Cbc => XENC_NS,
            };
            assert!(a.uri().starts_with(ns), "{a:?}");
            assert_eq!(EncryptionAlgorithm::from_uri(a.uri()), Some(a));
            assert_eq!(EncryptionAlgorithm::from_name(a.name()), Some(a));
        }
        assert_eq!(
            EncryptionAlgorithm::from_uri("http://www.w3.org/2001/04/xmlenc#tripledes-cbc"),
            None
        );
        assert_eq!(EncryptionAlgorithm::from_name("AES256-GCM"), None);
    }
}
