//! Reading a request body with a size bound, and undoing its content encoding.

use bytes::Bytes;
use flate2::read::{DeflateDecoder, MultiGzDecoder, ZlibDecoder};
use http::HeaderMap;
use http::header::{CONTENT_ENCODING, CONTENT_LENGTH};
use http_body_util::{BodyExt, Limited};
use lather_envelope::{Fault, FaultKind};
use std::io::Read;

/// Reads the whole body, refusing more than `limit` bytes (before any decoding).
pub(crate) async fn read_limited<B>(
    headers: &HeaderMap,
    body: B,
    limit: usize,
) -> Result<Bytes, Fault>
where
    B: hyper::body::Body<Data = Bytes>,
    B::Error: std::error::Error + Send + Sync + 'static,
{
    let declared = headers
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if let Some(len) = declared
        && len > limit as u64
    {
        return Err(too_large(FaultKind::MessageTooLarge, len, limit));
    }
    match Limited::new(body, limit).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(e)
            if e.downcast_ref::<http_body_util::LengthLimitError>()
                .is_some() =>
        {
            Err(Fault::with_reason(
                FaultKind::MessageTooLarge,
                format!("message exceeds the limit of {limit} bytes"),
            ))
        }
        Err(e) => Err(Fault::with_reason(
            FaultKind::BadRequestBody,
            format!("reading the request body failed: {e}"),
        )),
    }
}

/// Undoes `Content-Encoding` (`gzip`, `x-gzip`, `deflate`, `identity`), refusing output
/// larger than `limit` so a small compressed body cannot expand without bound.
pub(crate) fn decode(headers: &HeaderMap, raw: Bytes, limit: usize) -> Result<Bytes, Fault> {
    let Some(encoding) = headers.get(CONTENT_ENCODING) else {
        return Ok(raw);
    };
    let encoding = encoding.to_str().unwrap_or("?").trim().to_ascii_lowercase();
    match encoding.as_str() {
        "" | "identity" => Ok(raw),
        "gzip" | "x-gzip" => inflate(MultiGzDecoder::new(&raw[..]), limit, "gzip"),
        "deflate" => {
            // RFC 9110 deflate is zlib-wrapped; some clients send raw DEFLATE.
            inflate(ZlibDecoder::new(&raw[..]), limit, "deflate").or_else(|first| {
                inflate(DeflateDecoder::new(&raw[..]), limit, "deflate").map_err(|_| first)
            })
        }
        other => Err(Fault::with_reason(
            FaultKind::UnsupportedContentEncoding,
            format!("content encoding {other:?} is not supported; use gzip, deflate or identity"),
        )),
    }
}

fn inflate(decoder: impl Read, limit: usize, name: &str) -> Result<Bytes, Fault> {
    let mut out = Vec::new();
    let read = decoder.take(limit as u64 + 1).read_to_end(&mut out);
    match read {
        Ok(n) if n > limit => Err(too_large(FaultKind::DecodedTooLarge, n as u64, limit)),
        Ok(_) => Ok(Bytes::from(out)),
        Err(e) => Err(Fault::with_reason(
            FaultKind::BadRequestBody,
            format!("the {name} body could not be decoded: {e}"),
        )),
    }
}

fn too_large(kind: FaultKind, len: u64, limit: usize) -> Fault {
    let what = if kind == FaultKind::DecodedTooLarge {
        "decompressed message"
    } else {
        "message"
    };
    let size = if len > limit as u64 {
        format!("more than {limit}")
    } else {
        len.to_string()
    };
    Fault::with_reason(
        kind,
        format!("{what} of {size} bytes exceeds the limit of {limit} bytes"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::Compression;
    use flate2::write::{GzEncoder, ZlibEncoder};
    use std::io::Write;

    fn with_encoding(enc: &'static str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(CONTENT_ENCODING, enc.parse().unwrap());
        h
    }

    #[test]
    fn gzip_and_deflate_round_trip() {
        let text = b"<a>hello</a>".repeat(10);
        let mut gz = GzEncoder::new(Vec::new(), Compression::default());
        gz.write_all(&text).unwrap();
        let out = decode(&with_encoding("gzip"), gz.finish().unwrap().into(), 1000).unwrap();
        assert_eq!(&out[..], &text[..]);
        let mut z = ZlibEncoder::new(Vec::new(), Compression::default());
        z.write_all(&text).unwrap();
        let out = decode(&with_encoding("deflate"), z.finish().unwrap().into(), 1000).unwrap();
        assert_eq!(&out[..], &text[..]);
    }

    #[test]
    fn a_zip_bomb_stops_at_the_limit() {
        let mut gz = GzEncoder::new(Vec::new(), Compression::best());
        gz.write_all(&vec![b'a'; 10_000_000]).unwrap();
        let bomb = gz.finish().unwrap();
        assert!(bomb.len() < 20_000);
        let err = decode(&with_encoding("gzip"), bomb.into(), 64 * 1024).unwrap_err();
        assert_eq!(err.kind(), FaultKind::DecodedTooLarge);
    }

    #[test]
    fn unknown_encodings_and_garbage_are_refused() {
        assert_eq!(
            decode(&with_encoding("br"), Bytes::new(), 10)
                .unwrap_err()
                .kind(),
            FaultKind::UnsupportedContentEncoding
        );
        assert_eq!(
            decode(&with_encoding("gzip"), Bytes::from_static(b"nope"), 10)
                .unwrap_err()
                .kind(),
            FaultKind::BadRequestBody
        );
    }
}
