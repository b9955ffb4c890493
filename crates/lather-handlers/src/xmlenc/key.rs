//! The shared AES key and its file format.

use std::fmt;

/// Why a key cannot be used: its length, or its file's format.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyError(String);

impl fmt::Display for KeyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for KeyError {}

impl KeyError {
    /// A key of `have` bytes for an algorithm that needs `need`.
    pub(crate) fn mismatch(algorithm: &str, need: usize, have: usize) -> Self {
        KeyError(format!(
            "{algorithm} needs a {need}-byte key, not {have} bytes"
        ))
    }
}

/// An AES key of 16 bytes (AES-128) or 32 bytes (AES-256). Its `Debug` shows the length,
/// never the bytes.
#[derive(Clone, PartialEq, Eq)]
pub struct EncryptionKey(Vec<u8>);

impl EncryptionKey {
    /// The key `bytes`; anything but 16 or 32 bytes is refused.
    pub fn new(bytes: &[u8]) -> Result<EncryptionKey, KeyError> {
        match bytes.len() {
            16 | 32 => Ok(EncryptionKey(bytes.to_vec())),
            n => Err(KeyError(format!("an AES key has 16 or 32 bytes, not {n}"))),
        }
    }

    /// Reads a key file: one line of 32 or 64 hex digits (surrounding whitespace ignored),
    /// or else exactly 16 or 32 raw bytes. A text that is all hex digits is read as hex.
    pub fn from_file_contents(contents: &[u8]) -> Result<EncryptionKey, KeyError> {
        let text = contents.trim_ascii();
        if !text.is_empty() && text.iter().all(u8::is_ascii_hexdigit) {
            match text.len() {
                32 | 64 => return EncryptionKey::new(&decode_hex(text)),
                // Raw bytes that happen to be hex digits, e.g. a 16-character key.
                _ if matches!(contents.len(), 16 | 32) => {}
                n => {
                    return Err(KeyError(format!(
                        "a hex key has 32 or 64 digits (16 or 32 bytes), not {n}"
                    )));
                }
            }
        }
        EncryptionKey::new(contents).map_err(|_| {
            KeyError(format!(
                "expected 16 or 32 raw bytes or one line of 32 or 64 hex digits, found {} bytes",
                contents.len()
            ))
        })
    }

    /// The length in bytes: 16 or 32.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Always false: a key has 16 or 32 bytes.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub(crate) fn bytes(&self) -> &[u8] {
        &self.0
    }
}

impl fmt::Debug for EncryptionKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "EncryptionKey({} bytes)", self.0.len())
    }
}

/// Decodes pairs of hex digits (already checked to be hex, even in number).
fn decode_hex(text: &[u8]) -> Vec<u8> {
    let digit = |c: u8| match c {
        b'0'..=b'9' => c - b'0',
        b'a'..=b'f' => c - b'a' + 10,
        _ => c - b'A' + 10,
    };
    text.chunks_exact(2)
        .map(|pair| digit(pair[0]) << 4 | digit(pair[1]))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_hex_lines_and_raw_bytes() {
        let hex = b"000102030405060708090a0B0c0d0e0F\n";
        let key = EncryptionKey::from_file_contents(hex).unwrap();
        assert_eq!(key.bytes(), (0u8..16).collect::<Vec<_>>());
        let hex256 = format!("  {}\r\n", "ff".repeat(32));
        assert_eq!(
            EncryptionKey::from_file_contents(hex256.as_bytes())
                .unwrap()
                .bytes(),
            [0xff; 32]
        );
        let raw: Vec<u8> = (200u8..232).collect();
        assert_eq!(
            EncryptionKey::from_file_contents(&raw).unwrap().bytes(),
            &raw[..]
        );
        // 16 raw bytes that are all hex digits are a raw key, not 8 bytes of hex.
        let digits = b"0123456789abcdef";
        assert_eq!(
            EncryptionKey::from_file_contents(digits).unwrap().bytes(),
            digits
        );
    }

    #[test]
    fn refuses_other_lengths_and_hides_the_key() {
        let short = EncryptionKey::from_file_contents(b"00112233\n")
            .unwrap_err()
            .to_string();
        assert!(short.contains("32 or 64 digits"), "{short}");
        let odd = EncryptionKey::from_file_contents(&[7u8; 24])
            .unwrap_err()
            .to_string();
        assert!(odd.contains("found 24 bytes"), "{odd}");
        assert!(EncryptionKey::from_file_contents(b"").is_err());
        let key = EncryptionKey::new(&[0x41; 16]).unwrap();
        assert_eq!(format!("{key:?}"), "EncryptionKey(16 bytes)");
    }
}
