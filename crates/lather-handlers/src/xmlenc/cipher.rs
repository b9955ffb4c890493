//! The bytes of a CipherValue: AES-GCM and AES-CBC as XML Encryption lays them out.
//!
//! - GCM (XML Encryption 1.1 §5.2.4): IV (12 bytes) ‖ ciphertext ‖ tag (16 bytes), no
//!   additional authenticated data.
//! - CBC (XML Encryption 1.0 §5.2): IV (16 bytes) ‖ ciphertext of the plaintext padded to
//!   whole blocks with N − 1 arbitrary bytes and a last byte N (1 to 16), the ISO 10126
//!   style §5.2 prescribes. Only the last byte is checked: PKCS#7's check of every padding
//!   byte would refuse valid messages.
//!
//! Everything works in place on one buffer, so decrypting costs no copy beyond the decoded
//! CipherValue itself.

use super::algorithm::{EncryptionAlgorithm, Mode};
use super::key::EncryptionKey;
use aes::{Aes128, Aes256};
use aes_gcm::aead::{Nonce, Tag};
use aes_gcm::{AeadInOut, Aes128Gcm, Aes256Gcm, KeyInit};
use cbc::cipher::block_padding::{Iso10126, NoPadding};
use cbc::cipher::{BlockModeDecrypt, BlockModeEncrypt, KeyIvInit};

const GCM_IV: usize = 12;
const GCM_TAG: usize = 16;
const BLOCK: usize = 16;

/// Why bytes could not be encrypted or decrypted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CipherError {
    /// The key's length does not fit the algorithm.
    KeyLength,
    /// The CipherValue cannot be one of this algorithm: too short, or (CBC) not whole
    /// blocks. Says nothing about the key, so it may be told.
    Shape(&'static str),
    /// The tag did not verify, or the padding is impossible. One answer for both, so no
    /// padding oracle.
    Undecryptable,
    /// The system gave no random bytes for the IV or the padding.
    NoRandomness,
}

/// `plaintext` encrypted with a fresh random IV (and, for CBC, random padding), laid out
/// for a CipherValue.
pub(crate) fn encrypt(
    algorithm: EncryptionAlgorithm,
    key: &EncryptionKey,
    plaintext: &[u8],
) -> Result<Vec<u8>, CipherError> {
    if key.len() != algorithm.key_len() {
        return Err(CipherError::KeyLength);
    }
    let key = key.bytes();
    match algorithm.mode() {
        Mode::Gcm => {
            let mut out = Vec::with_capacity(GCM_IV + plaintext.len() + GCM_TAG);
            out.resize(GCM_IV, 0);
            random(&mut out)?;
            out.extend_from_slice(plaintext);
            let (iv, body) = out.split_at_mut(GCM_IV);
            let tag = match algorithm {
                EncryptionAlgorithm::Aes128Gcm => gcm_seal::<Aes128Gcm>(key, iv, body)?,
                _ => gcm_seal::<Aes256Gcm>(key, iv, body)?,
            };
            out.extend_from_slice(&tag);
            Ok(out)
        }
        Mode::Cbc => {
            let pad = BLOCK - plaintext.len() % BLOCK;
            let mut out = Vec::with_capacity(BLOCK + plaintext.len() + pad);
            out.resize(BLOCK, 0);
            random(&mut out)?;
            out.extend_from_slice(plaintext);
            let filler = out.len();
            out.resize(filler + pad, 0);
            random(&mut out[filler..filler + pad - 1])?;
            // `pad` is 1 to 16: it fits a byte.
            out[filler + pad - 1] = pad as u8;
            let (iv, body) = out.split_at_mut(BLOCK);
            match algorithm {
                EncryptionAlgorithm::Aes128Cbc => {
                    cbc_seal::<cbc::Encryptor<Aes128>>(key, iv, body)?
                }
                _ => cbc_seal::<cbc::Encryptor<Aes256>>(key, iv, body)?,
            }
            Ok(out)
        }
    }
}

/// The plaintext of the CipherValue bytes `data`, decrypted in place.
pub(crate) fn decrypt(
    algorithm: EncryptionAlgorithm,
    key: &EncryptionKey,
    mut data: Vec<u8>,
) -> Result<Vec<u8>, CipherError> {
    if key.len() != algorithm.key_len() {
        return Err(CipherError::KeyLength);
    }
    let key = key.bytes();
    let (start, len) = match algorithm.mode() {
        Mode::Gcm => {
            let Some(len) = data.len().checked_sub(GCM_IV + GCM_TAG) else {
                return Err(CipherError::Shape(
                    "shorter than the 12-byte IV and the 16-byte tag",
                ));
            };
            let (iv, rest) = data.split_at_mut(GCM_IV);
            let (body, tag) = rest.split_at_mut(len);
            match algorithm {
                EncryptionAlgorithm::Aes128Gcm => gcm_open::<Aes128Gcm>(key, iv, body, tag)?,
                _ => gcm_open::<Aes256Gcm>(key, iv, body, tag)?,
            }
            (GCM_IV, len)
        }
        Mode::Cbc => {
            if data.len() < 2 * BLOCK {
                return Err(CipherError::Shape(
                    "shorter than the 16-byte IV and one block",
                ));
            }
            if !data.len().is_multiple_of(BLOCK) {
                return Err(CipherError::Shape("not a whole number of 16-byte blocks"));
            }
            let (iv, body) = data.split_at_mut(BLOCK);
            let len = match algorithm {
                EncryptionAlgorithm::Aes128Cbc => {
                    cbc_open::<cbc::Decryptor<Aes128>>(key, iv, body)?
                }
                _ => cbc_open::<cbc::Decryptor<Aes256>>(key, iv, body)?,
            };
            (BLOCK, len)
        }
    };
    data.copy_within(start..start + len, 0);
    data.truncate(len);
    Ok(data)
}

fn gcm_seal<C: KeyInit + AeadInOut>(
    key: &[u8],
    iv: &[u8],
    body: &mut [u8],
) -> Result<Tag<C>, CipherError> {
    let cipher = C::new_from_slice(key).map_err(|_| CipherError::KeyLength)?;
    let nonce =
        Nonce::<C>::try_from(iv).map_err(|_| CipherError::Shape("an IV of another size"))?;
    cipher
        .encrypt_inout_detached(&nonce, &[], body.into())
        .map_err(|_| CipherError::Undecryptable)
}

fn gcm_open<C: KeyInit + AeadInOut>(
    key: &[u8],
    iv: &[u8],
    body: &mut [u8],
    tag: &[u8],
) -> Result<(), CipherError> {
    let cipher = C::new_from_slice(key).map_err(|_| CipherError::KeyLength)?;
    let nonce = Nonce::<C>::try_from(iv).map_err(|_| CipherError::Undecryptable)?;
    let tag = Tag::<C>::try_from(tag).map_err(|_| CipherError::Undecryptable)?;
    cipher
        .decrypt_inout_detached(&nonce, &[], body.into(), &tag)
        .map_err(|_| CipherError::Undecryptable)
}

fn cbc_seal<M: KeyIvInit + BlockModeEncrypt>(
    key: &[u8],
    iv: &[u8],
    padded: &mut [u8],
) -> Result<(), CipherError> {
    let len = padded.len();
    M::new_from_slices(key, iv)
        .map_err(|_| CipherError::KeyLength)?
        .encrypt_padded::<NoPadding>(padded, len)
        .map(|_| ())
        .map_err(|_| CipherError::Shape("not a whole number of 16-byte blocks"))
}

/// Decrypts `body` in place; the plaintext's length without the padding.
fn cbc_open<M: KeyIvInit + BlockModeDecrypt>(
    key: &[u8],
    iv: &[u8],
    body: &mut [u8],
) -> Result<usize, CipherError> {
    M::new_from_slices(key, iv)
        .map_err(|_| CipherError::KeyLength)?
        .decrypt_padded::<Iso10126>(body)
        .map(<[u8]>::len)
        .map_err(|_| CipherError::Undecryptable)
}

fn random(buf: &mut [u8]) -> Result<(), CipherError> {
    getrandom::fill(buf).map_err(|_| CipherError::NoRandomness)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(len: usize) -> EncryptionKey {
        EncryptionKey::new(&vec![0x5a; len]).unwrap()
    }

    #[test]
    fn every_algorithm_round_trips_every_length_around_a_block() {
        for algorithm in EncryptionAlgorithm::ALL {
            let key = key(algorithm.key_len());
            for n in [0, 1, 15, 16, 17, 31, 32, 33, 100] {
                let plaintext: Vec<u8> = (0..n).map(|i| i as u8).collect();
                let sealed = encrypt(algorithm, &key, &plaintext).unwrap();
                let expected = match algorithm.mode() {
                    Mode::Gcm => GCM_IV + n + GCM_TAG,
                    Mode::Cbc => BLOCK + (n / BLOCK + 1) * BLOCK,
                };
                assert_eq!(sealed.len(), expected, "{algorithm:?} {n}");
                assert_eq!(decrypt(algorithm, &key, sealed).unwrap(), plaintext);
            }
        }
    }

    #[test]
    fn ivs_are_fresh_and_cbc_padding_is_random_but_for_its_last_byte() {
        let key = key(16);
        let plaintext = [b'x'; 32];
        let a = encrypt(EncryptionAlgorithm::Aes128Cbc, &key, &plaintext).unwrap();
        let b = encrypt(EncryptionAlgorithm::Aes128Cbc, &key, &plaintext).unwrap();
        assert_ne!(a[..BLOCK], b[..BLOCK]);
        // Decrypt without unpadding: 32 bytes of plaintext take a whole block of padding.
        let (iv, body) = a.split_at(BLOCK);
        let mut body = body.to_vec();
        let raw = cbc::Decryptor::<Aes128>::new_from_slices(key.bytes(), iv)
            .unwrap()
            .decrypt_padded::<NoPadding>(&mut body)
            .unwrap()
            .to_vec();
        let padding = &raw[32..];
        assert_eq!(padding.len(), 16);
        assert_eq!(padding[15], 16);
        // Fifteen random bytes all equal to 16 by chance: probability 2^-120.
        assert!(padding[..15].iter().any(|&b| b != 16), "{padding:?}");
        let g1 = encrypt(EncryptionAlgorithm::Aes128Gcm, &key, &plaintext).unwrap();
        let g2 = encrypt(EncryptionAlgorithm::Aes128Gcm, &key, &plaintext).unwrap();
        assert_ne!(g1[..GCM_IV], g2[..GCM_IV]);
    }

    #[test]
    fn tampering_and_wrong_keys_give_one_answer_and_shapes_are_told() {
        for algorithm in EncryptionAlgorithm::ALL {
            let good = key(algorithm.key_len());
            let sealed = encrypt(algorithm, &good, b"<a>some plaintext</a>").unwrap();
            let mut other = vec![0x5a; algorithm.key_len()];
            other[0] ^= 1;
            let other = EncryptionKey::new(&other).unwrap();
            // A wrong key breaks the tag (GCM). Under CBC it yields garbage whose last byte
            // happens to be a valid padding length one time in sixteen: then the garbage
            // comes back (and the handler's XML check refuses it with the same answer).
            match decrypt(algorithm, &other, sealed.clone()) {
                Err(e) => assert_eq!(e, CipherError::Undecryptable),
                Ok(garbage) => {
                    assert_eq!(algorithm.mode(), Mode::Cbc);
                    assert_ne!(garbage, b"<a>some plaintext</a>");
                }
            }
            let too_short = sealed[..GCM_IV + GCM_TAG - 1].to_vec();
            assert!(matches!(
                decrypt(algorithm, &good, too_short),
                Err(CipherError::Shape(_))
            ));
            let wrong_size = key(48 - algorithm.key_len());
            assert_eq!(
                decrypt(algorithm, &wrong_size, sealed.clone()),
                Err(CipherError::KeyLength)
            );
            assert_eq!(
                encrypt(algorithm, &wrong_size, b"x"),
                Err(CipherError::KeyLength)
            );
        }
        let cbc = encrypt(EncryptionAlgorithm::Aes256Cbc, &key(32), &[b'x'; 20]).unwrap();
        assert_eq!(
            decrypt(
                EncryptionAlgorithm::Aes256Cbc,
                &key(32),
                cbc[..cbc.len() - 1].to_vec()
            ),
            Err(CipherError::Shape("not a whole number of 16-byte blocks"))
        );
    }
}
