//! Building an [`Envelope`] from the scanner's events.

use crate::envelope::Section;
use crate::escape::{trim_xml, unescape};
use crate::namespace::{
    NsDecl, push_decls, resolve_element, resolve_parts, resolve_prefix, split_name,
};
use crate::scan::{
    Attribute, Event, Mode, ScanError, Scanner, StartTag, check_characters, is_whitespace,
};
use crate::source::Source;
use crate::{Envelope, Fault, FaultKind, HeaderBlock, Limits, SoapVersion};
use bytes::Bytes;
use std::collections::HashSet;
use std::ops::Range;
use std::sync::Arc;

impl Envelope {
    /// Parses a SOAP 1.1 or 1.2 envelope, checking the whole message against `limits`.
    ///
    /// Refused, each with its own [`FaultKind`]: a message over `max_message_bytes`
    /// (`MessageTooLarge`), bytes that are not UTF-8 (`NotUtf8`), XML that is not
    /// well-formed (`MalformedXml`), a DOCTYPE (`DoctypeForbidden`; no entity is ever
    /// expanded), nesting deeper than `max_depth` (`TooDeep`), more than `max_attributes` on
    /// one element (`TooManyAttributes`), a document element that is not an Envelope
    /// (`NotAnEnvelope`), an unknown envelope namespace (`VersionMismatch`), no Body
    /// (`MissingBody`) and other structural errors (`InvalidEnvelope`).
    ///
    /// A UTF-16 message (with a byte order mark, or starting with `<` in UTF-16) is
    /// transcoded to UTF-8 first and parsed as that: the envelope's bytes are UTF-8, its
    /// XML declaration says so, and the UTF-8 form must fit in `max_message_bytes` too.
    ///
    /// ```
    /// use lather_envelope::{Envelope, Limits, SoapVersion};
    /// let msg = r#"<s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope">
    ///   <s:Header><t:Trace xmlns:t="urn:t" s:mustUnderstand="true">42</t:Trace></s:Header>
    ///   <s:Body><m:Ping xmlns:m="urn:m"/></s:Body></s:Envelope>"#;
    /// let env = Envelope::parse(msg.into(), &Limits::default()).unwrap();
    /// assert_eq!(env.version(), SoapVersion::V12);
    /// assert!(env.headers()[0].must_understand());
    /// assert_eq!(env.operation().unwrap().local(), "Ping");
    /// ```
    pub fn parse(bytes: Bytes, limits: &Limits) -> Result<Envelope, Fault> {
        if bytes.len() > limits.max_message_bytes {
            return Err(Fault::with_reason(
                FaultKind::MessageTooLarge,
                format!(
                    "message of {} bytes exceeds the limit of {} bytes",
                    bytes.len(),
                    limits.max_message_bytes
                ),
            ));
        }
        let bytes = match crate::utf16::to_utf8(&bytes, limits.max_message_bytes) {
            None => bytes,
            Some(Ok(utf8)) => utf8,
            Some(Err(e)) => return Err(Fault::with_reason(e.kind, e.message)),
        };
        Builder::run(bytes, *limits).map_err(|e| Fault::with_reason(e.kind, e.message))
    }
}

/// Where the walk is, relative to the SOAP structure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    Envelope,
    Header,
    Body,
    /// A foreign element after the Body (allowed by SOAP 1.1 only).
    Trailer,
}

struct Builder {
    bytes: Bytes,
    version: Option<SoapVersion>,
    prefix: Range<usize>,
    scope: Vec<NsDecl>,
    frames: [usize; 4],
    envelope_decls: Vec<NsDecl>,
    header: Option<Section>,
    body: Option<Section>,
    blocks: Vec<HeaderBlock>,
    operation: Option<crate::QName>,
    payload: Option<Range<usize>>,
    body_children: usize,
    place: Place,
    /// The distinct namespaces of the header blocks so far that are too long to be kept per
    /// thread (`crate::interned`), shared by their names.
    block_namespaces: HashSet<Arc<str>>,
}

fn invalid(message: impl Into<String>) -> ScanError {
    ScanError::new(FaultKind::InvalidEnvelope, message)
}

impl Builder {
    fn run(bytes: Bytes, limits: Limits) -> Result<Envelope, ScanError> {
        let source = Source::checked(check_characters(&bytes)?);
        let mut b = Builder {
            bytes: bytes.clone(),
            version: None,
            prefix: 0..0,
            scope: Vec::new(),
            frames: [0; 4],
            envelope_decls: Vec::new(),
            header: None,
            body: None,
            blocks: Vec::new(),
            operation: None,
            payload: None,
            body_children: 0,
            place: Place::Envelope,
            block_namespaces: HashSet::new(),
        };
        let mut scanner = Scanner::new(&bytes, Mode::Document, limits);
        let mut depth = 0usize;
        let mut open_starts: [(usize, usize); 4] = Default::default();
        loop {
            match scanner.next()? {
                Event::Eof => break,
                Event::Start { tag, empty } => {
                    let d = depth + 1;
                    if d <= 3 {
                        b.frames[d] = b.scope.len();
                        push_decls(&bytes, scanner.tag_attributes(), &mut b.scope);
                        b.start(source, d, &tag, scanner.tag_attributes())?;
                        let (start, end) = (tag.start, tag.end);
                        open_starts[d] = (start, end);
                        if empty {
                            b.finish(d, start..end, end..end);
                            b.scope.truncate(b.frames[d]);
                        }
                    }
                    if !empty {
                        depth = d;
                    }
                }
                Event::End { start, end } => {
                    if depth <= 3 {
                        let (open_start, open_end) = open_starts[depth];
                        b.finish(depth, open_start..end, open_end..start);
                        b.scope.truncate(b.frames[depth]);
                    }
                    depth -= 1;
                }
                Event::Text { range, cdata } => {
                    // Depth 2 is the Header's or Body's content, or a SOAP 1.1 trailer
                    // element's, which may hold anything.
                    if (depth == 1 || (depth == 2 && b.place != Place::Trailer))
                        && (cdata || !is_whitespace(&bytes[range.clone()]))
                    {
                        return Err(invalid(format!(
                            "character data directly inside a SOAP element at byte {}",
                            range.start
                        )));
                    }
                }
            }
        }
        b.into_envelope()
    }

    fn start(
        &mut self,
        source: Source<'_>,
        depth: usize,
        tag: &StartTag,
        attributes: &[Attribute],
    ) -> Result<(), ScanError> {
        let buf = source.bytes();
        let (start, end, name) = (tag.start, tag.end, tag.name.clone());
        match depth {
            1 => {
                let (ns, local) = resolve_parts(source, &self.scope, name.clone())?;
                if local != "Envelope" {
                    let qname = crate::QName::new(ns, local);
                    return Err(ScanError::new(
                        FaultKind::NotAnEnvelope,
                        format!("the document element is {qname}, not a SOAP Envelope"),
                    ));
                }
                let version = SoapVersion::from_namespace(&ns).ok_or_else(|| {
                    ScanError::new(
                        FaultKind::VersionMismatch,
                        format!("envelope namespace {ns:?} is neither SOAP 1.1 nor SOAP 1.2"),
                    )
                })?;
                self.version = Some(version);
                self.prefix = split_name(buf, name).0;
                self.envelope_decls = self.scope.clone();
            }
            2 => {
                let version = self.version_now();
                let (ns, local) = resolve_parts(source, &self.scope, name)?;
                let section = || Section {
                    outer: start..end,
                    content: end..end,
                    decls: self.scope[self.frames[2]..].to_vec(),
                };
                let env_ns = version.namespace();
                let in_env = ns == env_ns;
                if in_env && local == "Header" && self.header.is_none() && self.body.is_none() {
                    self.header = Some(section());
                    self.place = Place::Header;
                } else if in_env && local == "Body" && self.body.is_none() {
                    self.body = Some(section());
                    self.place = Place::Body;
                } else if self.body.is_some()
                    && version == SoapVersion::V11
                    && !in_env
                    && !ns.is_empty()
                {
                    self.place = Place::Trailer;
                } else {
                    let qname = crate::QName::new(ns, local);
                    return Err(invalid(format!(
                        "unexpected element {qname} in the Envelope"
                    )));
                }
            }
            3 => match self.place {
                Place::Header => {
                    let block = self.header_block(source, tag, attributes)?;
                    self.blocks.push(block);
                }
                Place::Body => {
                    self.body_children += 1;
                    if self.operation.is_none() {
                        self.operation = Some(resolve_element(source, &self.scope, name)?);
                        self.payload = Some(start..end);
                    }
                }
                Place::Envelope | Place::Trailer => {}
            },
            _ => {}
        }
        Ok(())
    }

    /// Records where an element of `depth` ends: its whole range and its content range.
    fn finish(&mut self, depth: usize, outer: Range<usize>, content: Range<usize>) {
        match (depth, self.place) {
            (2, Place::Header) => {
                if let Some(h) = self.header.as_mut() {
                    h.outer = outer;
                    h.content = content;
                }
                self.place = Place::Envelope;
            }
            (2, Place::Body) => {
                if let Some(b) = self.body.as_mut() {
                    b.outer = outer;
                    b.content = content;
                }
                self.place = Place::Envelope;
            }
            (2, _) => self.place = Place::Envelope,
            (3, Place::Header) => {
                if let Some(block) = self.blocks.last_mut() {
                    block.range = outer;
                    block.content = content;
                }
            }
            (3, Place::Body) => {
                if let Some(p) = self.payload.as_mut()
                    && p.start == outer.start
                {
                    *p = outer;
                }
            }
            _ => {}
        }
    }

    fn header_block(
        &mut self,
        source: Source<'_>,
        tag: &StartTag,
        attributes: &[Attribute],
    ) -> Result<HeaderBlock, ScanError> {
        let version = self.version_now();
        let mut block = read_header_block(source, &self.scope, version, tag, attributes)?;
        // Blocks in one namespace share one copy of it: a namespace declared once costs its
        // length once, however many blocks use it. Names short enough to be kept per thread
        // share their copy already (`crate::interned`); only longer ones are looked up.
        if block.name.namespace().len() <= crate::interned::LONGEST {
            return Ok(block);
        }
        match self.block_namespaces.get(block.name.namespace()) {
            Some(shared) => block.name = block.name.share_namespace(shared),
            None => {
                self.block_namespaces
                    .insert(block.name.namespace_shared().clone());
            }
        }
        Ok(block)
    }

    fn version_now(&self) -> SoapVersion {
        self.version.unwrap_or(SoapVersion::V11)
    }

    fn into_envelope(self) -> Result<Envelope, ScanError> {
        let Some(version) = self.version else {
            return Err(ScanError::new(
                FaultKind::NotAnEnvelope,
                "no Envelope element",
            ));
        };
        let Some(body) = self.body else {
            return Err(ScanError::new(
                FaultKind::MissingBody,
                "the envelope has no Body element",
            ));
        };
        Ok(Envelope {
            bytes: self.bytes,
            version,
            prefix: self.prefix,
            envelope_decls: self.envelope_decls,
            header: self.header,
            blocks: self.blocks,
            body,
            operation: self.operation,
            payload: self.payload,
            body_children: self.body_children,
        })
    }
}

/// A header block's record from its start tag and the `attributes` read from it, names
/// resolved in `scope` (the declarations in scope, the block's own included). Its range
/// and content are set to the start tag; the caller extends them to the end tag.
pub(crate) fn read_header_block(
    source: Source<'_>,
    scope: &[NsDecl],
    version: SoapVersion,
    tag: &StartTag,
    attributes: &[Attribute],
) -> Result<HeaderBlock, ScanError> {
    let buf = source.bytes();
    let qname = resolve_element(source, scope, tag.name.clone())?;
    if qname.namespace().is_empty() {
        return Err(invalid(format!(
            "header block {qname} is not namespace-qualified"
        )));
    }
    let mut block = HeaderBlock {
        name: qname,
        must_understand: false,
        role: None,
        relay: false,
        range: tag.start..tag.end,
        name_end: tag.name.end,
        attrs: tag.attrs.clone(),
        content: tag.end..tag.end,
    };
    for attr in attributes {
        let (prefix, local) = split_name(buf, attr.name.clone());
        if prefix.is_empty() {
            continue;
        }
        let ns = resolve_prefix(source, scope, &buf[prefix], false)?;
        if ns != version.namespace() {
            continue;
        }
        let raw = source.text(attr.value.clone()).unwrap_or_default();
        let value = unescape(raw).ok_or_else(|| invalid("bad reference in attribute"))?;
        let local = &buf[local];
        if local == b"mustUnderstand" {
            block.must_understand = parse_bool(version, trim_xml(&value)).ok_or_else(|| {
                invalid(format!("mustUnderstand must be a boolean, not {value:?}"))
            })?;
        } else if local == version.role_attribute().as_bytes() {
            block.role = Some(trim_xml(&value).to_owned());
        } else if local == b"relay" && version == SoapVersion::V12 {
            block.relay = parse_bool(version, trim_xml(&value))
                .ok_or_else(|| invalid(format!("relay must be a boolean, not {value:?}")))?;
        }
    }
    Ok(block)
}

fn parse_bool(version: SoapVersion, value: &str) -> Option<bool> {
    match (version, value) {
        (_, "1") => Some(true),
        (_, "0") => Some(false),
        (SoapVersion::V12, "true") => Some(true),
        (SoapVersion::V12, "false") => Some(false),
        _ => None,
    }
}

#[cfg(test)]
mod shared_namespace_tests {
    use crate::{Envelope, Limits, SOAP12_NS};

    /// Whether two names' namespaces are one copy.
    fn one_copy(a: &crate::QName, b: &crate::QName) -> bool {
        std::sync::Arc::ptr_eq(a.namespace_shared(), b.namespace_shared())
    }

    /// Blocks in one namespace short enough to be kept per thread share the thread's copy.
    #[test]
    fn header_blocks_in_one_short_namespace_share_it() {
        let ns = format!("urn:{}", "s".repeat(200));
        let blocks: String = (0..50).map(|_| r#"<h:b e:mustUnderstand="1"/>"#).collect();
        let xml = format!(
            r#"<e:Envelope xmlns:e="{SOAP12_NS}" xmlns:h="{ns}"><e:Header>{blocks}</e:Header><e:Body/></e:Envelope>"#
        );
        let env = Envelope::parse(xml.into(), &Limits::default()).unwrap();
        let headers = env.headers();
        assert_eq!(headers.len(), 50);
        let first = headers[0].name();
        assert!(headers.iter().all(|h| one_copy(h.name(), first)));
    }

    /// Thousands of blocks in one long namespace declared once hold one copy of it.
    #[test]
    fn header_blocks_in_one_namespace_share_it() {
        let ns = format!("urn:{}", "n".repeat(1020));
        let blocks: String = (0..2000)
            .map(|i| format!(r#"<h:b{i} e:mustUnderstand="1"/>"#))
            .collect();
        let xml = format!(
            r#"<e:Envelope xmlns:e="{SOAP12_NS}" xmlns:h="{ns}"><e:Header>{blocks}<o:x xmlns:o="urn:o"/><h:last/></e:Header><e:Body/></e:Envelope>"#
        );
        let env = Envelope::parse(xml.into(), &Limits::default()).unwrap();
        let headers = env.headers();
        assert_eq!(headers.len(), 2002);
        let first = headers[0].name();
        assert!(headers[..2000].iter().all(|h| one_copy(h.name(), first)));
        assert_eq!(headers[2000].name().namespace(), "urn:o");
        assert!(one_copy(headers[2001].name(), first));
    }
}
