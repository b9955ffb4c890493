//! Compressed notifications: a subscriber asks for gzip with
//! `<lev:Compression xmlns:lev="urn:lather:eventing">gzip</lev:Compression>` in its
//! Subscribe's Delivery; notifications of at least the source's `compress_min_bytes` are
//! then sent gzip-compressed, smaller ones plain: over HTTP with `Content-Encoding: gzip`,
//! on `soap.tcp` and `lather.bin` with a flag in the frame (`crate::delivery::binding`). [`gunzip`]
//! is the sinks' bounded inflate.

use crate::protocol::problem::{Problem, Refusal, refuse};
use crate::protocol::version::LATHER_EVENTING_NS;
use bytes::Bytes;
use flate2::read::MultiGzDecoder;
use lather_envelope::{Element, QName};
use std::io::Read;

/// The compressions a Delivery may ask for (`identity` = none).
pub const COMPRESSIONS: [&str; 2] = ["gzip", "identity"];

/// The default `compress_min_bytes`: smaller notifications gain too little from gzip.
pub const DEFAULT_COMPRESS_MIN_BYTES: usize = 1024;

/// Whether `delivery` asks for gzip (`lev:Compression`); another value is refused.
pub(crate) fn requested(delivery: &Element) -> Result<bool, Refusal> {
    let Some(element) = delivery.child(&QName::new(LATHER_EVENTING_NS, "Compression")) else {
        return Ok(false);
    };
    match element.text().trim() {
        "gzip" => Ok(true),
        "identity" => Ok(false),
        other => refuse(
            Problem::Compression,
            format!(
                "notification compression {other:?} is not supported; supported: {}",
                COMPRESSIONS.join(", ")
            ),
        ),
    }
}

/// The `lev:SupportedCompression` elements of an UnsupportedCompression fault's detail.
pub(crate) fn supported() -> String {
    COMPRESSIONS
        .iter()
        .map(|c| {
            format!(
                r#"<lev:SupportedCompression xmlns:lev="{LATHER_EVENTING_NS}">{c}</lev:SupportedCompression>"#
            )
        })
        .collect()
}

/// `data` gunzipped, refusing more than `limit` bytes of output (so a small compressed
/// frame cannot expand without bound: the same bounded read as lather-http's request
/// bodies, which cannot be called from here — lather-http depends on this crate).
pub(crate) fn gunzip(data: &[u8], limit: usize) -> Result<Vec<u8>, GunzipError> {
    let mut out = Vec::new();
    match MultiGzDecoder::new(data)
        .take(limit as u64 + 1)
        .read_to_end(&mut out)
    {
        Ok(n) if n > limit => Err(GunzipError::TooLarge(limit)),
        Ok(_) => Ok(out),
        Err(e) => Err(GunzipError::Undecodable(e.to_string())),
    }
}

/// Why compressed bytes could not be inflated.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GunzipError {
    /// They inflate beyond the limit (in bytes).
    #[error("decompressed frame exceeds the limit of {0} bytes")]
    TooLarge(usize),
    /// They are not gzip (the decoder's reason).
    #[error("the gzip data could not be decoded: {0}")]
    Undecodable(String),
}

/// `envelope` gzip-compressed if it has at least `min_bytes`; `None` if it stays plain.
pub(crate) fn gzip(envelope: &[u8], min_bytes: usize) -> Option<Bytes> {
    if envelope.len() < min_bytes {
        return None;
    }
    // This thread's deflate state, reset: a fresh one per notification would be many times
    // the work of compressing it.
    lather_gzip::gzip(envelope, lather_gzip::Level::Default).map(Bytes::from)
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::read::GzDecoder;

    #[test]
    fn gzip_only_from_the_threshold_on_and_it_round_trips() {
        let body = "<e>".to_owned() + &"x".repeat(2000) + "</e>";
        assert!(gzip(body.as_bytes(), body.len() + 1).is_none());
        let packed = gzip(body.as_bytes(), body.len()).expect("compressed");
        assert!(packed.len() < body.len() / 10);
        let mut back = String::new();
        GzDecoder::new(&packed[..])
            .read_to_string(&mut back)
            .unwrap();
        assert_eq!(back, body);
        assert_eq!(gunzip(&packed, body.len()).unwrap(), body.as_bytes());
    }

    #[test]
    fn gunzip_stops_at_its_limit() {
        let bomb = gzip(&vec![0u8; 10 * 1024 * 1024], 0).unwrap();
        assert!(bomb.len() < 20_000);
        let err = gunzip(&bomb, 1024 * 1024).unwrap_err().to_string();
        assert!(err.contains("exceeds the limit of 1048576"), "{err}");
        assert!(
            gunzip(b"not gzip", 100)
                .unwrap_err()
                .to_string()
                .contains("could not be decoded")
        );
    }
}
