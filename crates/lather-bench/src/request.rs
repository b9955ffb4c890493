//! The request every virtual client sends: built once, cloned cheaply.

use bytes::Bytes;
use http::header::{CONTENT_LENGTH, CONTENT_TYPE, HOST, HeaderMap, HeaderName, HeaderValue};
use http::{Method, Request, Uri};
use http_body_util::Full;

use crate::error::BenchError;

/// SOAP version of the built-in request (`--soap`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum SoapVersionArg {
    /// SOAP 1.1: `text/xml` with a `SOAPAction` header.
    #[default]
    #[value(name = "1.1")]
    V11,
    /// SOAP 1.2: `application/soap+xml` with an `action` parameter.
    #[value(name = "1.2")]
    V12,
}

/// The SOAP action of the built-in echo operation.
const ECHO_ACTION: &str = "urn:lather:echo#echo";

/// A pre-built request: the body is a `Bytes` shared by every request, so
/// building one costs a header-map clone and nothing else.
#[derive(Debug, Clone)]
pub(crate) struct RequestTemplate {
    path: Uri,
    headers: HeaderMap,
    body: Bytes,
    /// Where `--vary` marks are in the body (start, length); empty: one body for all.
    marks: Vec<(usize, usize)>,
    /// The next sequence number written into the marks, shared by every connection.
    sequence: std::sync::Arc<std::sync::atomic::AtomicU64>,
    /// Of every 100 requests, how many get fresh marks; the others repeat one body (the
    /// marks of sequence number 0), so a cache in front sees about this miss ratio.
    unique_percent: u8,
    /// The run's first sequence number: different in every run, so two runs against one
    /// server (a cache in front) do not send the same bodies.
    first: u64,
}

/// What the request is made of, as given on the command line.
#[derive(Debug)]
pub(crate) struct RequestSpec<'a> {
    /// `host[:port]` for the `Host` header.
    pub(crate) authority: &'a str,
    /// Origin-form request target (`/path?query`).
    pub(crate) path: Uri,
    /// SOAP version of the built-in request (also picks the default headers).
    pub(crate) soap: SoapVersionArg,
    /// Raw body; `None` for the built-in SOAP echo request.
    pub(crate) body: Option<Bytes>,
    /// Size of the text inside `<text>` of the built-in request.
    pub(crate) payload_bytes: usize,
    /// `--content-type` override.
    pub(crate) content_type: Option<&'a str>,
    /// `--header 'Name: value'` entries, applied last.
    pub(crate) headers: &'a [String],
    /// `--vary MARK` entries: texts replaced by a sequence number in each request.
    pub(crate) vary: &'a [String],
}

impl RequestTemplate {
    /// Builds the template, validating every header.
    pub(crate) fn new(spec: &RequestSpec<'_>) -> Result<Self, BenchError> {
        let body = match &spec.body {
            Some(body) => body.clone(),
            None => soap_echo_body(spec.soap, spec.payload_bytes),
        };

        let mut headers = echo_headers(spec.soap, spec.authority)?;
        headers.insert(CONTENT_LENGTH, HeaderValue::from(body.len()));
        if let Some(ct) = spec.content_type {
            headers.insert(CONTENT_TYPE, header_value(ct, ct)?);
        }

        let parsed = spec
            .headers
            .iter()
            .map(|h| parse_header(h))
            .collect::<Result<Vec<_>, _>>()?;
        for (name, _) in &parsed {
            headers.remove(name);
        }
        for (name, value) in parsed {
            headers.append(name, value);
        }

        let mut marks = Vec::new();
        for mark in spec.vary {
            if mark.is_empty() {
                return Err(BenchError::InvalidArgument(
                    "--vary needs a non-empty MARK".into(),
                ));
            }
            let found: Vec<_> = memchr::memmem::find_iter(&body, mark.as_bytes())
                .map(|at| (at, mark.len()))
                .collect();
            if found.is_empty() {
                return Err(BenchError::InvalidArgument(format!(
                    "--vary {mark:?}: not in the request body"
                )));
            }
            marks.extend(found);
        }
        let first = run_seed();
        Ok(Self {
            path: spec.path.clone(),
            headers,
            body,
            marks,
            sequence: std::sync::Arc::new(std::sync::atomic::AtomicU64::new(first)),
            unique_percent: 100,
            first,
        })
    }

    /// Only `percent` of 100 requests get fresh marks; the rest repeat one body (the
    /// run's first).
    pub(crate) fn with_unique_percent(mut self, percent: u8) -> Self {
        self.unique_percent = percent.min(100);
        self
    }

    /// The body of the next request: the template's, with the marks (if any) replaced
    /// by hexadecimal digits drawn from the next sequence number, scrambled so that every
    /// digit changes from one request to the next as in a random UUID.
    fn next_body(&self) -> Bytes {
        if self.marks.is_empty() {
            return self.body.clone();
        }
        let mut n = self
            .sequence
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        // Spread evenly: request n is fresh when it moves the count of fresh ones on;
        // the others repeat the run's first body.
        let fresh = |n: u64| u128::from(n) * u128::from(self.unique_percent) / 100;
        if fresh(n.wrapping_add(1)) == fresh(n) {
            n = self.first;
        }
        let mut body = self.body.to_vec();
        for &(at, len) in &self.marks {
            let mut state = n;
            let mut digits = String::with_capacity(len + 16);
            while digits.len() < len {
                digits.push_str(&format!("{:016x}", splitmix64(&mut state)));
            }
            body[at..at + len].copy_from_slice(&digits.as_bytes()[..len]);
        }
        Bytes::from(body)
    }

    /// A fresh request: the template's body, or a unique one with `--vary`.
    pub(crate) fn build(&self) -> Request<Full<Bytes>> {
        let mut req = Request::new(Full::new(self.next_body()));
        *req.method_mut() = Method::POST;
        *req.uri_mut() = self.path.clone();
        *req.headers_mut() = self.headers.clone();
        req
    }

    /// Length of the request body in bytes.
    pub(crate) fn body_len(&self) -> usize {
        self.body.len()
    }
}

/// Where a run's sequence numbers start: the clock's nanoseconds, shifted so that runs
/// between 4 µs and 4 hours apart never overlap in their first 2^32 requests.
fn run_seed() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    nanos << 20
}

/// The headers of the built-in echo request in `soap` to `authority`: `Host`, and the
/// version's content type with the echo action (`SOAPAction` for 1.1).
pub(crate) fn echo_headers(soap: SoapVersionArg, authority: &str) -> Result<HeaderMap, BenchError> {
    let mut headers = HeaderMap::new();
    headers.insert(HOST, header_value(authority, "Host")?);
    match soap {
        SoapVersionArg::V11 => {
            headers.insert(
                CONTENT_TYPE,
                HeaderValue::from_static("text/xml; charset=utf-8"),
            );
            let action = format!("\"{ECHO_ACTION}\"");
            headers.insert(
                HeaderName::from_static("soapaction"),
                header_value(&action, "SOAPAction")?,
            );
        }
        SoapVersionArg::V12 => {
            let ct = format!("application/soap+xml; charset=utf-8; action=\"{ECHO_ACTION}\"");
            headers.insert(CONTENT_TYPE, header_value(&ct, "Content-Type")?);
        }
    }
    Ok(headers)
}

/// SplitMix64: a bijection of `u64`, so distinct sequence numbers give distinct first
/// words.
fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The built-in SOAP echo request with `payload_bytes` ASCII letters of text.
pub(crate) fn soap_echo_body(soap: SoapVersionArg, payload_bytes: usize) -> Bytes {
    let env_ns = match soap {
        SoapVersionArg::V11 => "http://schemas.xmlsoap.org/soap/envelope/",
        SoapVersionArg::V12 => "http://www.w3.org/2003/05/soap-envelope",
    };
    let head = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?><soap:Envelope xmlns:soap=\"{env_ns}\">\
         <soap:Body><ns:echo xmlns:ns=\"urn:lather:echo\"><text>"
    );
    let tail = "</text></ns:echo></soap:Body></soap:Envelope>";
    let mut body = Vec::with_capacity(head.len() + payload_bytes + tail.len());
    body.extend_from_slice(head.as_bytes());
    body.extend((b'a'..=b'z').cycle().take(payload_bytes));
    body.extend_from_slice(tail.as_bytes());
    Bytes::from(body)
}

/// Parses `Name: value`.
fn parse_header(raw: &str) -> Result<(HeaderName, HeaderValue), BenchError> {
    let invalid = |reason: &str| BenchError::InvalidHeader {
        header: raw.to_owned(),
        reason: reason.to_owned(),
    };
    let (name, value) = raw
        .split_once(':')
        .ok_or_else(|| invalid("expected 'Name: value'"))?;
    let name = HeaderName::try_from(name.trim()).map_err(|e| invalid(&e.to_string()))?;
    let value = HeaderValue::try_from(value.trim()).map_err(|e| invalid(&e.to_string()))?;
    Ok((name, value))
}

fn header_value(value: &str, what: &str) -> Result<HeaderValue, BenchError> {
    HeaderValue::try_from(value).map_err(|e| BenchError::InvalidHeader {
        header: what.to_owned(),
        reason: e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn soap11_body_has_the_exact_shape() {
        let body = soap_echo_body(SoapVersionArg::V11, 30);
        assert_eq!(
            std::str::from_utf8(&body).unwrap(),
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?><soap:Envelope \
             xmlns:soap=\"http://schemas.xmlsoap.org/soap/envelope/\"><soap:Body>\
             <ns:echo xmlns:ns=\"urn:lather:echo\"><text>abcdefghijklmnopqrstuvwxyzabcd\
             </text></ns:echo></soap:Body></soap:Envelope>"
        );
    }

    #[test]
    fn soap12_uses_the_1_2_namespace_and_action_parameter() {
        let spec = RequestSpec {
            authority: "example:80",
            path: Uri::from_static("/echo"),
            soap: SoapVersionArg::V12,
            body: None,
            payload_bytes: 5,
            content_type: None,
            headers: &[],
            vary: &[],
        };
        let t = RequestTemplate::new(&spec).unwrap();
        let req = t.build();
        assert!(
            std::str::from_utf8(&t.body)
                .unwrap()
                .contains("xmlns:soap=\"http://www.w3.org/2003/05/soap-envelope\"")
        );
        assert_eq!(
            req.headers()[CONTENT_TYPE],
            "application/soap+xml; charset=utf-8; action=\"urn:lather:echo#echo\""
        );
        assert!(req.headers().get("soapaction").is_none());
        assert_eq!(req.headers()[HOST], "example:80");
        assert_eq!(req.headers()[CONTENT_LENGTH], t.body_len().to_string());
    }

    #[test]
    fn user_headers_override_defaults_and_repeat() {
        let headers = vec![
            "SOAPAction: \"x\"".to_owned(),
            "X-A: 1".to_owned(),
            "x-a: 2".to_owned(),
        ];
        let spec = RequestSpec {
            authority: "h",
            path: Uri::from_static("/"),
            soap: SoapVersionArg::V11,
            body: Some(Bytes::from_static(b"abc")),
            payload_bytes: 0,
            content_type: Some("text/plain"),
            headers: &headers,
            vary: &[],
        };
        let req = RequestTemplate::new(&spec).unwrap().build();
        assert_eq!(req.headers()["soapaction"], "\"x\"");
        assert_eq!(req.headers().get_all("x-a").iter().count(), 2);
        assert_eq!(req.headers()[CONTENT_TYPE], "text/plain");
        assert_eq!(req.headers()[CONTENT_LENGTH], "3");
    }

    #[test]
    fn malformed_header_is_rejected() {
        assert!(parse_header("no colon").is_err());
        assert!(parse_header("bad name: v").is_err());
    }

    #[test]
    fn a_unique_percent_repeats_one_body_for_the_other_requests() {
        let mark = "X".repeat(16);
        let vary = vec![mark.clone()];
        let spec = RequestSpec {
            authority: "h",
            path: Uri::from_static("/"),
            soap: SoapVersionArg::V12,
            body: Some(Bytes::from(format!("<a>{mark}</a>"))),
            payload_bytes: 0,
            content_type: None,
            headers: &[],
            vary: &vary,
        };
        let mut t = RequestTemplate::new(&spec).unwrap().with_unique_percent(25);
        t.first = 0;
        t.sequence = std::sync::Arc::default();
        let bodies: Vec<Bytes> = (0..400).map(|_| t.next_body()).collect();
        let repeated = bodies.iter().filter(|b| **b == bodies[0]).count();
        let distinct: std::collections::HashSet<&Bytes> = bodies.iter().collect();
        assert_eq!(repeated, 300);
        assert_eq!(distinct.len(), 101);
    }

    #[test]
    fn vary_marks_take_a_fresh_sequence_number_in_each_request() {
        let mark = "X".repeat(16);
        let vary = vec![mark.clone()];
        let body = format!("<a>{mark}</a><c>{mark}</c>");
        let spec = RequestSpec {
            authority: "h",
            path: Uri::from_static("/"),
            soap: SoapVersionArg::V12,
            body: Some(Bytes::from(body.clone())),
            payload_bytes: 0,
            content_type: None,
            headers: &[],
            vary: &vary,
        };
        let template = RequestTemplate::new(&spec).unwrap();
        let bodies: Vec<Bytes> = (0..1000).map(|_| template.next_body()).collect();
        let unique: std::collections::HashSet<&Bytes> = bodies.iter().collect();
        assert_eq!(unique.len(), 1000, "every body differs");
        for body in &bodies {
            let text = std::str::from_utf8(body).unwrap();
            let (a, c) = (&text[3..19], &text[26..42]);
            assert_eq!(a, c, "both marks take the same digits: {text}");
            assert!(a.bytes().all(|b| b.is_ascii_hexdigit()), "{text}");
        }
        let missing = vec!["zz".to_owned()];
        let spec = RequestSpec {
            vary: &missing,
            ..spec
        };
        assert!(RequestTemplate::new(&spec).is_err());
    }
}
