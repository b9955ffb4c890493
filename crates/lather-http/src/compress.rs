//! Responses compressed for clients that ask: gzip when the request's QoS preference says
//! so (`required`; `server-decides` while the CPU is below `[qos] compress_below_cpu`) or,
//! without one, its `Accept-Encoding` takes gzip and the CPU allows; never a body below
//! `[server] compress_min_bytes` (unless required), never an answer that already has a
//! `Content-Encoding` (a backend's, passed through by a gateway).

use crate::respond::HttpResponse;
use bytes::Bytes;
use http::header::{
    ACCEPT_ENCODING, CONTENT_ENCODING, CONTENT_LENGTH, HeaderMap, HeaderValue, VARY,
};
use http_body_util::Full;
use lather_qos::{CompressionPreference, Decision, QosPolicy};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use std::sync::atomic::{AtomicU64, Ordering};

/// When responses are compressed: `[server]` switches and size threshold, the QoS policy
/// (who asked, and the CPU reading), and what was decided so far.
#[derive(Debug)]
pub(crate) struct ResponseCompression {
    /// `[server] compress_responses`.
    pub(crate) enabled: bool,
    /// `[server] compress_min_bytes`: smaller bodies go as they are unless the client
    /// requires compression.
    pub(crate) min_bytes: usize,
    /// The QoS preferences and the load they follow.
    pub(crate) policy: QosPolicy,
    /// Answers compressed.
    pub(crate) compressed: AtomicU64,
    /// Answers the client left to the server that went plain because the CPU was busy.
    pub(crate) plain_for_load: AtomicU64,
}

/// The compression preference that holds for one answer (set on it by the dispatcher
/// from the request's QoS header or a `[[qos.client]]` rule).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Chosen(pub(crate) Option<CompressionPreference>);

/// `answer` carrying the compression `preference` that holds for it (none: as it is).
pub(crate) fn with_preference(
    mut answer: HttpResponse,
    preference: Option<CompressionPreference>,
) -> HttpResponse {
    if preference.is_some() {
        answer.extensions_mut().insert(Chosen(preference));
    }
    answer
}

impl ResponseCompression {
    /// `response` gzip-compressed when the settings, the request's preference (a [`Chosen`]
    /// extension on the response; else whether it `accepts_gzip`) and the load allow.
    pub(crate) fn apply(&self, response: HttpResponse, accepts_gzip: bool) -> HttpResponse {
        if !self.enabled || response.headers().contains_key(CONTENT_ENCODING) {
            return response;
        }
        let preference = response.extensions().get::<Chosen>().and_then(|c| c.0);
        let required = preference == Some(CompressionPreference::Required);
        let size = hyper::body::Body::size_hint(response.body()).exact();
        let small = |n: u64| usize::try_from(n).unwrap_or(usize::MAX) < self.min_bytes;
        if size.is_none_or(|n| n == 0 || (!required && small(n))) {
            return response;
        }
        match self.policy.decide(preference, accepts_gzip) {
            Decision::Compress => {}
            Decision::Plain => return response,
            Decision::PlainForLoad => {
                self.plain_for_load.fetch_add(1, Ordering::Relaxed);
                return response;
            }
        }
        let (mut parts, plain) = crate::respond::into_parts(response);
        let Some(gzipped) = gzip(&plain) else {
            return HttpResponse::from_parts(parts, Full::new(plain));
        };
        self.compressed.fetch_add(1, Ordering::Relaxed);
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

/// `/metrics` for compression: answers compressed, answers left plain for load, and the
/// CPU reading the decisions follow.
#[derive(Debug)]
pub(crate) struct CompressionCollector(pub(crate) std::sync::Arc<ResponseCompression>);

impl Collector for CompressionCollector {
    fn encode(&self, mut encoder: DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
        let c = &self.0;
        for (name, help, value) in [
            (
                "responses_compressed",
                "Answers sent gzip-compressed",
                &c.compressed,
            ),
            (
                "responses_plain_for_load",
                "Answers left to the server (server-decides, or Accept-Encoding alone) sent plain because the CPU was at or above [qos] compress_below_cpu",
                &c.plain_for_load,
            ),
        ] {
            let metric = encoder.encode_descriptor(name, help, None, MetricType::Counter)?;
            ConstCounter::new(value.load(Ordering::Relaxed)).encode(metric)?;
        }
        let metric = encoder.encode_descriptor(
            "cpu_percent",
            "lather's CPU time over the last second, in percent of the CPUs it may use (what load-adaptive compression reads)",
            None,
            MetricType::Gauge,
        )?;
        ConstGauge::new(i64::from(c.policy.gauge().percent())).encode(metric)?;
        Ok(())
    }
}

/// `plain` gzip-compressed at the fast level, with this thread's deflate state
/// ([`lather_gzip`]; `None` only if the encoder fails).
pub(crate) fn gzip(plain: &[u8]) -> Option<Vec<u8>> {
    lather_gzip::gzip(plain, lather_gzip::Level::Fast)
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

    fn gunzip(gzipped: &[u8]) -> Vec<u8> {
        use std::io::Read as _;
        let mut plain = Vec::new();
        flate2::read::GzDecoder::new(gzipped)
            .read_to_end(&mut plain)
            .unwrap();
        plain
    }

    #[test]
    fn answers_are_gzipped_at_the_fast_level() {
        let text = "<m:quote><m:price>101.5</m:price></m:quote>".repeat(100);
        let gzipped = gzip(text.as_bytes()).unwrap();
        assert_eq!(gzipped[8], 4, "XFL: the fastest algorithm");
        assert_eq!(gunzip(&gzipped), text.as_bytes());
        assert!(gzipped.len() < text.len() / 10);
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
