//! Responses compressed for clients that ask: gzip when the request's `Accept-Encoding`
//! takes it and the body is at least `[server] compress_min_bytes`; never an answer that
//! already has a `Content-Encoding` (a backend's, passed through by a gateway).

use crate::respond::HttpResponse;
use bytes::Bytes;
use flate2::Compression;
use flate2::write::GzEncoder;
use http::header::{
    ACCEPT_ENCODING, CONTENT_ENCODING, CONTENT_LENGTH, HeaderMap, HeaderValue, VARY,
};
use http_body_util::Full;
use std::io::Write as _;

/// When responses are compressed.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ResponseCompression {
    /// `[server] compress_responses`.
    pub(crate) enabled: bool,
    /// `[server] compress_min_bytes`: smaller bodies go as they are.
    pub(crate) min_bytes: usize,
}

impl ResponseCompression {
    /// `response` gzip-compressed when the request (`accepts_gzip`) and the settings allow.
    pub(crate) fn apply(self, response: HttpResponse, accepts_gzip: bool) -> HttpResponse {
        if !self.enabled || !accepts_gzip || response.headers().contains_key(CONTENT_ENCODING) {
            return response;
        }
        let size = hyper::body::Body::size_hint(response.body()).exact();
        if size.is_none_or(|n| (n as usize) < self.min_bytes) {
            return response;
        }
        let (mut parts, plain) = crate::respond::into_parts(response);
        let Some(gzipped) = gzip(&plain) else {
            return HttpResponse::from_parts(parts, Full::new(plain));
        };
        parts
            .headers
            .insert(CONTENT_ENCODING, HeaderValue::from_static("gzip"));
        parts.headers.remove(CONTENT_LENGTH);
        parts
            .headers
            .append(VARY, HeaderValue::from_static("accept-encoding"));
        HttpResponse::from_parts(parts, Full::new(Bytes::from(gzipped)))
    }
}

/// `plain` gzip-compressed at the fast level (`None` only if the encoder fails).
pub(crate) fn gzip(plain: &[u8]) -> Option<Vec<u8>> {
    let mut encoder = GzEncoder::new(Vec::with_capacity(plain.len() / 4), Compression::fast());
    encoder.write_all(plain).ok()?;
    encoder.finish().ok()
}

/// Whether `headers` accept gzip: `Accept-Encoding` names `gzip` (or `x-gzip`, or `*`)
/// with a quality above 0 (RFC 9110 §12.5.3), and does not refuse it by name.
pub(crate) fn accepts_gzip(headers: &HeaderMap) -> bool {
    let mut star = false;
    for value in headers.get_all(ACCEPT_ENCODING) {
        let Ok(text) = value.to_str() else { continue };
        for item in text.split(',') {
            let mut fields = item.split(';');
            let coding = fields.next().unwrap_or("").trim().to_ascii_lowercase();
            let quality = fields
                .filter_map(|p| {
                    let (k, v) = p.split_once('=')?;
                    (k.trim().eq_ignore_ascii_case("q")).then(|| v.trim().parse::<f32>().ok())?
                })
                .next()
                .unwrap_or(1.0);
            match coding.as_str() {
                "gzip" | "x-gzip" => return quality > 0.0,
                "*" => star = quality > 0.0,
                _ => {}
            }
        }
    }
    star
}

#[cfg(test)]
mod tests {
    use super::*;

    fn accepts(value: &str) -> bool {
        let mut headers = HeaderMap::new();
        headers.insert(ACCEPT_ENCODING, HeaderValue::from_str(value).unwrap());
        accepts_gzip(&headers)
    }

    #[test]
    fn accept_encoding_is_read_with_its_qualities() {
        assert!(accepts("gzip"));
        assert!(accepts("deflate, gzip;q=0.5"));
        assert!(accepts("br, *"));
        assert!(accepts("X-GZIP"));
        assert!(!accepts("gzip;q=0"));
        assert!(!accepts("gzip; q=0.0, *"));
        assert!(!accepts("identity"));
        assert!(!accepts("br, *;q=0"));
        assert!(!accepts_gzip(&HeaderMap::new()));
    }
}
