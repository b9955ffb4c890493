//! Compressed notifications: a subscriber asks for gzip with
//! `<lev:Compression xmlns:lev="urn:lather:eventing">gzip</lev:Compression>` in its
//! Subscribe's Delivery; notifications of at least the source's `compress_min_bytes` are
//! then sent with `Content-Encoding: gzip`, smaller ones plain.

use crate::problem::{Problem, Refusal, refuse};
use crate::version::LATHER_EVENTING_NS;
use bytes::Bytes;
use flate2::Compression;
use flate2::write::GzEncoder;
use lather_envelope::{Element, QName};
use std::io::Write;

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

/// `envelope` gzip-compressed if it has at least `min_bytes`; `None` if it stays plain.
pub(crate) fn gzip(envelope: &[u8], min_bytes: usize) -> Option<Bytes> {
    if envelope.len() < min_bytes {
        return None;
    }
    let mut encoder = GzEncoder::new(
        Vec::with_capacity(envelope.len() / 4 + 64),
        Compression::default(),
    );
    encoder.write_all(envelope).ok()?;
    encoder.finish().ok().map(Bytes::from)
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::read::GzDecoder;
    use std::io::Read;

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
    }
}
