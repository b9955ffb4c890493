//! The compressed-Body convention shared by `compress` and `decompress`.
//!
//! A compressed Body holds exactly one element:
//!
//! ```xml
//! <lc:Compressed xmlns:lc="urn:lather:compression" algorithm="gzip" length="96">H4sIAAAA…</lc:Compressed>
//! ```
//!
//! Its text is the base64 (RFC 4648, standard alphabet; whitespace ignored) of the original
//! Body content — the exact bytes between `<Body>` and `</Body>`, UTF-8 — compressed with
//! `algorithm`: `gzip` (RFC 1952) or `deflate` (the zlib wrapping of RFC 1950, as HTTP's
//! `Content-Encoding: deflate`). `length` is the uncompressed size: a hint for the
//! output buffer's size (within `max_bytes`), nothing more.
//! Prefixes in the content may rely on declarations of the Envelope: decompressing restores
//! the content in the same place.

use crate::base64_text;
use bytes::Bytes;
use flate2::Compression;
use flate2::read::{MultiGzDecoder, ZlibDecoder};
use flate2::write::ZlibEncoder;
use lather_envelope::{Envelope, Fault, FaultKind, QName};
use std::io::{Read, Write};

/// The convention's namespace.
pub const COMPRESSION_NS: &str = "urn:lather:compression";

/// How the content is compressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Algorithm {
    /// RFC 1952.
    Gzip,
    /// zlib-wrapped DEFLATE (RFC 1950).
    Deflate,
}

impl Algorithm {
    /// The algorithm called `name`.
    pub fn parse(name: &str) -> Option<Algorithm> {
        match name {
            "gzip" => Some(Algorithm::Gzip),
            "deflate" => Some(Algorithm::Deflate),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Algorithm::Gzip => "gzip",
            Algorithm::Deflate => "deflate",
        }
    }
}

/// The `lc:Compressed` element for `content`.
pub(crate) fn encode(content: &[u8], algorithm: Algorithm) -> Bytes {
    let compressed = match algorithm {
        Algorithm::Gzip => {
            lather_gzip::gzip(content, lather_gzip::Level::Default).unwrap_or_default()
        }
        Algorithm::Deflate => {
            let mut w = ZlibEncoder::new(Vec::new(), Compression::default());
            let _ = w.write_all(content);
            w.finish().unwrap_or_default()
        }
    };
    Bytes::from(format!(
        r#"<lc:Compressed xmlns:lc="{COMPRESSION_NS}" algorithm="{}" length="{}">{}</lc:Compressed>"#,
        algorithm.name(),
        content.len(),
        base64_text::encode(&compressed)
    ))
}

/// Whether the envelope's Body is a compressed Body.
pub(crate) fn is_compressed(envelope: &Envelope) -> bool {
    envelope.body_child_count() == 1
        && envelope.operation() == Some(&QName::new(COMPRESSION_NS, "Compressed"))
}

/// The original Body content of a compressed Body, at most `max_bytes` long.
pub(crate) fn decode(envelope: &Envelope, max_bytes: usize) -> Result<Bytes, Fault> {
    let bad = |why: &str| {
        Fault::with_reason(
            FaultKind::BadCompressedBody,
            format!("compressed Body: {why}"),
        )
    };
    let body = envelope.body();
    let text = std::str::from_utf8(&body).map_err(|_| bad("not UTF-8"))?;
    let (start_tag, rest) = split_start_tag(text).ok_or_else(|| bad("no element"))?;
    let algorithm =
        attribute(start_tag, "algorithm").ok_or_else(|| bad("no algorithm attribute"))?;
    let algorithm = Algorithm::parse(algorithm)
        .ok_or_else(|| bad(&format!("unknown algorithm {algorithm:?}")))?;
    let end = rest.rfind("</").ok_or_else(|| bad("not a text element"))?;
    let compressed = base64_text::decode(&rest.as_bytes()[..end])
        .map_err(|e| bad(&format!("bad base64 ({e})")))?;
    // The stated length sizes the output (within the limit), so it is not grown and copied
    // along the way; a wrong one costs only that.
    let stated = attribute(start_tag, "length").and_then(|l| l.parse::<usize>().ok());
    let mut out = Vec::with_capacity(stated.unwrap_or(0).min(max_bytes));
    let limit = max_bytes as u64 + 1;
    let read = match algorithm {
        Algorithm::Gzip => MultiGzDecoder::new(&compressed[..])
            .take(limit)
            .read_to_end(&mut out),
        Algorithm::Deflate => ZlibDecoder::new(&compressed[..])
            .take(limit)
            .read_to_end(&mut out),
    };
    read.map_err(|e| bad(&format!("bad {} data ({e})", algorithm.name())))?;
    if out.len() > max_bytes {
        return Err(Fault::with_reason(
            FaultKind::DecodedTooLarge,
            format!("the decompressed Body exceeds the limit of {max_bytes} bytes"),
        ));
    }
    if std::str::from_utf8(&out).is_err() {
        return Err(bad("decompressed content is not UTF-8"));
    }
    Ok(Bytes::from(out))
}

/// The start tag (without `<` and `>`) of the first element in `text`, and what follows it.
fn split_start_tag(text: &str) -> Option<(&str, &str)> {
    let open = text.find('<')?;
    let mut quote = None;
    for (i, c) in text[open..].char_indices() {
        match (quote, c) {
            (None, '"' | '\'') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, '>') => return Some((&text[open + 1..open + i], &text[open + i + 1..])),
            _ => {}
        }
    }
    None
}

/// The raw value of attribute `name` in a start tag.
fn attribute<'a>(tag: &'a str, name: &str) -> Option<&'a str> {
    let mut rest = tag;
    while let Some(at) = rest.find(name) {
        let before_ok = rest[..at].ends_with(|c: char| c.is_ascii_whitespace());
        let after = rest[at + name.len()..].trim_start();
        if before_ok && let Some(value) = after.strip_prefix('=') {
            let value = value.trim_start();
            let q = value.chars().next().filter(|c| *c == '"' || *c == '\'')?;
            return value[1..].find(q).map(|end| &value[1..1 + end]);
        }
        rest = &rest[at + name.len()..];
    }
    None
}
