//! Reading a request body with a size bound and a pace, and undoing its content encoding.

use bytes::{Bytes, BytesMut};
use flate2::read::{DeflateDecoder, MultiGzDecoder, ZlibDecoder};
use futures_util::FutureExt;
use http::HeaderMap;
use http::header::{CONTENT_ENCODING, CONTENT_LENGTH};
use http_body_util::{BodyExt, Limited};
use lather_envelope::{Fault, FaultKind};
use std::io::Read;
use std::time::Duration;
use tokio::time::Instant;

/// How fast a request body must arrive.
///
/// Two rules, both measured from the first moment the body is waited for (what came with
/// the request's head is read untimed): the whole body within `total`, and — after
/// `grace` — on average at least `min_rate` bytes per second. Each byte
/// received buys `1 / min_rate` s more, so a client that keeps up the rate on average may
/// pause (a TCP stall, a slow start), while one that trickles a byte now and then is cut
/// within about `grace` plus a moment. A steady client of a 4 MiB body needs about
/// 140 KiB/s to finish within the default 30 s (raise `total` for slower links).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BodyPace {
    /// The longest a whole body may take.
    pub(crate) total: Duration,
    /// The slowest average rate after the grace, in bytes per second; 0 turns the rule off.
    pub(crate) min_rate: u64,
    /// The time before the rate rule applies.
    pub(crate) grace: Duration,
}

impl BodyPace {
    /// The time the rate rule gives before the rate applies.
    pub(crate) const GRACE: Duration = Duration::from_secs(1);

    /// The pace of `[server] body_timeout_ms` and `min_body_bytes_per_s`.
    pub(crate) fn from_config(server: &lather_config::ServerConfig) -> Self {
        BodyPace {
            total: Duration::from_millis(server.body_timeout_ms),
            min_rate: server.min_body_bytes_per_s,
            grace: Self::GRACE,
        }
    }

    /// When the next bytes must have arrived, timing from `started` and having received
    /// `received` bytes in all (any that came before `started` included).
    fn deadline(&self, started: Instant, received: usize) -> Instant {
        let hard = started + self.total;
        if self.min_rate == 0 {
            return hard;
        }
        let bought = Duration::from_secs_f64(received as f64 / self.min_rate as f64);
        hard.min(started + self.grace + bought)
    }

    fn too_slow(&self, started: Instant, received: usize) -> Fault {
        let elapsed = started.elapsed();
        let reason = if elapsed >= self.total {
            format!(
                "the request body did not arrive within {} ms ({received} bytes received)",
                self.total.as_millis()
            )
        } else {
            format!(
                "the request body arrived too slowly: {received} bytes in {:.1} s, below \
                 {} bytes/s",
                elapsed.as_secs_f64(),
                self.min_rate
            )
        };
        Fault::with_reason(FaultKind::RequestTooSlow, reason)
    }
}

/// Reads the whole body, refusing more than `limit` bytes (before any decoding) and a body
/// slower than `pace` ([`FaultKind::RequestTooSlow`]).
pub(crate) async fn read_limited<B>(
    headers: &HeaderMap,
    body: B,
    limit: usize,
    pace: &BodyPace,
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
    let mut body = std::pin::pin!(Limited::new(body, limit));
    let mut first: Option<Bytes> = None;
    let mut rest = BytesMut::new();
    let mut received = 0usize;
    // The pace is timed from the first wait: a body that has arrived with its head (most
    // do) is read without a clock or a timer.
    let mut started: Option<Instant> = None;
    loop {
        let ready = match body.frame().now_or_never() {
            Some(ready) => ready,
            None => {
                let since = *started.get_or_insert_with(Instant::now);
                let deadline = pace.deadline(since, received);
                match tokio::time::timeout_at(deadline, body.frame()).await {
                    Err(_) => return Err(pace.too_slow(since, received)),
                    Ok(ready) => ready,
                }
            }
        };
        let frame = match ready {
            None => break,
            Some(frame) => frame.map_err(|e| read_failed(e, limit))?,
        };
        // Trailers carry nothing a SOAP message needs.
        let Ok(data) = frame.into_data() else {
            continue;
        };
        if data.is_empty() {
            continue;
        }
        received += data.len();
        // One chunk (the common case) is kept as it came; more are joined once.
        match first.take() {
            None if rest.is_empty() => first = Some(data),
            Some(chunk) => {
                rest.reserve(declared.map_or(0, |n| n as usize).min(limit));
                rest.extend_from_slice(&chunk);
                rest.extend_from_slice(&data);
            }
            None => rest.extend_from_slice(&data),
        }
    }
    Ok(first.unwrap_or_else(|| rest.freeze()))
}

fn read_failed(e: Box<dyn std::error::Error + Send + Sync>, limit: usize) -> Fault {
    if e.downcast_ref::<http_body_util::LengthLimitError>()
        .is_some()
    {
        Fault::with_reason(
            FaultKind::MessageTooLarge,
            format!("message exceeds the limit of {limit} bytes"),
        )
    } else {
        Fault::with_reason(
            FaultKind::BadRequestBody,
            format!("reading the request body failed: {e}"),
        )
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
