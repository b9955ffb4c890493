//! Building new envelopes: responses and requests in either SOAP version.

use crate::SoapVersion;
use crate::escape::{escape_attribute, escape_text};
use bytes::{Bytes, BytesMut};

/// Builds an envelope from header blocks and body content.
///
/// ```
/// use lather_envelope::{EnvelopeBuilder, SoapVersion};
/// let msg = EnvelopeBuilder::new(SoapVersion::V11)
///     .header(EnvelopeBuilder::text_element("urn:t", "t", "Trace", "42"))
///     .body("<m:Pong xmlns:m=\"urn:m\"/>".into())
///     .build();
/// assert!(std::str::from_utf8(&msg).unwrap().contains("<soap:Body><m:Pong"));
/// ```
#[derive(Debug, Clone)]
pub struct EnvelopeBuilder {
    version: SoapVersion,
    headers: Vec<Bytes>,
    body: Bytes,
    body_namespaces: Vec<(String, String)>,
}

impl EnvelopeBuilder {
    /// An empty envelope of `version`.
    pub fn new(version: SoapVersion) -> Self {
        EnvelopeBuilder {
            version,
            headers: Vec::new(),
            body: Bytes::new(),
            body_namespaces: Vec::new(),
        }
    }

    /// Appends a header block (one well-formed element, its namespaces declared on itself).
    pub fn header(mut self, block: Bytes) -> Self {
        self.headers.push(block);
        self
    }

    /// Sets the Body's content.
    pub fn body(mut self, content: Bytes) -> Self {
        self.body = content;
        self
    }

    /// Declares `(prefix, raw escaped URI)` pairs on the Body element, for content whose
    /// prefixes were declared outside it (see [`Envelope::body_namespaces`](crate::Envelope::body_namespaces)).
    pub fn body_namespaces(mut self, decls: Vec<(String, String)>) -> Self {
        self.body_namespaces = decls;
        self
    }

    /// Moves `envelope`'s Body content here: the content, and the namespace declarations in
    /// scope for it — as [`body`](Self::body) with [`Envelope::body`](crate::Envelope::body)
    /// and [`body_namespaces`](Self::body_namespaces) with
    /// [`Envelope::body_namespaces`](crate::Envelope::body_namespaces) — without copying a
    /// declaration of this envelope's own default prefix and namespace, which it makes
    /// itself.
    pub fn body_from(mut self, envelope: &crate::Envelope) -> Self {
        let own = (self.version.default_prefix(), self.version.namespace());
        self.body_namespaces = envelope.body_namespaces_except(Some(own));
        self.body = envelope.body();
        self
    }

    /// A simple text element `<p:local xmlns:p="ns">text</p:local>`, e.g. a `wsa:RelatesTo`.
    pub fn text_element(ns: &str, prefix: &str, local: &str, text: &str) -> Bytes {
        Bytes::from(format!(
            r#"<{prefix}:{local} xmlns:{prefix}="{}">{}</{prefix}:{local}>"#,
            escape_attribute(ns),
            escape_text(text)
        ))
    }

    /// The envelope's bytes.
    pub fn build(self) -> Bytes {
        let p = self.envelope_prefix();
        let p = p.as_bytes();
        let ns = self.version.namespace();
        let decls: usize = self
            .body_namespaces
            .iter()
            .map(|(prefix, uri)| prefix.len() + uri.len() + 10)
            .sum();
        let extra = self.headers.iter().map(Bytes::len).sum::<usize>() + self.body.len() + decls;
        let mut out = BytesMut::with_capacity(160 + 6 * p.len() + extra);
        // `<{p}:{local}` then `close`.
        let tag = |out: &mut BytesMut, open: &[u8], local: &[u8], close: &[u8]| {
            out.extend_from_slice(open);
            out.extend_from_slice(p);
            out.extend_from_slice(b":");
            out.extend_from_slice(local);
            out.extend_from_slice(close);
        };
        out.extend_from_slice(br#"<?xml version="1.0" encoding="UTF-8"?>"#);
        tag(&mut out, b"<", b"Envelope", b" xmlns:");
        out.extend_from_slice(p);
        out.extend_from_slice(b"=\"");
        out.extend_from_slice(ns.as_bytes());
        out.extend_from_slice(b"\">");
        if !self.headers.is_empty() {
            tag(&mut out, b"<", b"Header", b">");
            for h in &self.headers {
                out.extend_from_slice(h);
            }
            tag(&mut out, b"</", b"Header", b">");
        }
        tag(&mut out, b"<", b"Body", b"");
        for (prefix, uri) in &self.body_namespaces {
            if prefix.as_bytes() == p && uri == ns {
                continue;
            }
            out.extend_from_slice(b" xmlns");
            if !prefix.is_empty() {
                out.extend_from_slice(b":");
                out.extend_from_slice(prefix.as_bytes());
            }
            out.extend_from_slice(b"=\"");
            out.extend_from_slice(uri.as_bytes());
            out.extend_from_slice(b"\"");
        }
        out.extend_from_slice(b">");
        out.extend_from_slice(&self.body);
        tag(&mut out, b"</", b"Body", b">");
        tag(&mut out, b"</", b"Envelope", b">");
        out.freeze()
    }

    /// The envelope prefix: the version's default unless the body's namespaces bind it to
    /// another URI, in which case one they leave free.
    fn envelope_prefix(&self) -> std::borrow::Cow<'static, str> {
        let ns = self.version.namespace();
        let free = |candidate: &str| {
            self.body_namespaces
                .iter()
                .all(|(prefix, uri)| prefix != candidate || uri == ns)
        };
        if let Some(known) = [self.version.default_prefix(), "soapenv", "s"]
            .into_iter()
            .find(|c| free(c))
        {
            return known.into();
        }
        (0..)
            .map(|i| format!("s{i}"))
            .find(|c| free(c))
            .map_or("soapenv".into(), Into::into)
    }
}
