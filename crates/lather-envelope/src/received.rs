//! Reading a fault someone else sent: the code, subcodes, reason, node, role and detail of
//! a SOAP 1.1 or 1.2 Fault element, whoever wrote it. (Beside `fault`, not inside it:
//! `element`, which this reads with, depends on `fault`.)

use crate::{
    Element, Envelope, Fault, FaultKind, Limits, QName, SOAP11_NS, SOAP12_NS, SoapVersion,
};
use bytes::Bytes;
use std::fmt;

/// A SOAP fault as received in an answer: what the sender put in its Fault element, with
/// QName-valued codes resolved to namespaces.
///
/// SOAP 1.1's `faultcode`, `faultstring`, `faultactor` and `detail` map onto
/// [`code`](ReceivedFault::code), [`reason`](ReceivedFault::reason),
/// [`role`](ReceivedFault::role) and the detail; SOAP 1.1 has no subcodes and no node.
///
/// ```
/// use lather_envelope::{Envelope, Fault, FaultKind, Limits, ReceivedFault, SoapVersion};
/// let bytes = Fault::new(FaultKind::NoSuchService).to_envelope(SoapVersion::V12);
/// let envelope = Envelope::parse(bytes, &Limits::default()).unwrap();
/// let fault = ReceivedFault::from_envelope(&envelope, &Limits::default()).unwrap().unwrap();
/// assert_eq!(fault.code().local(), "Sender");
/// assert_eq!(fault.lather_fault_name().as_deref(), Some("NoSuchService"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReceivedFault {
    version: SoapVersion,
    code: QName,
    subcodes: Vec<QName>,
    reason: String,
    node: Option<String>,
    role: Option<String>,
    detail: Option<Bytes>,
    detail_entries: Vec<Bytes>,
}

impl ReceivedFault {
    /// The fault in `envelope`'s Body, `Ok(None)` if the Body holds no Fault. The Fault
    /// element is parsed with `limits`; a Fault element that cannot be read (not well-formed
    /// within the limits, no code) is a `InvalidEnvelope` [`Fault`].
    pub fn from_envelope(envelope: &Envelope, limits: &Limits) -> Result<Option<Self>, Fault> {
        if !envelope.is_fault() {
            return Ok(None);
        }
        let Some(payload) = envelope.extract_payload() else {
            return Ok(None);
        };
        let element = Element::parse(&payload, limits)?;
        Self::from_element(envelope.version(), &element, &payload).map(Some)
    }

    /// Reads a `Fault` element parsed from `source` in a `version` envelope.
    pub fn from_element(
        version: SoapVersion,
        element: &Element,
        source: &[u8],
    ) -> Result<Self, Fault> {
        match version {
            SoapVersion::V12 => read_soap12(element, source),
            SoapVersion::V11 => read_soap11(element, source),
        }
    }

    /// The SOAP version of the envelope the fault came in.
    pub fn version(&self) -> SoapVersion {
        self.version
    }

    /// The fault code: `{SOAP 1.2 ns}Sender`, `{SOAP 1.1 ns}Client`, … (a code whose
    /// prefix is undeclared keeps its text as the local name, without a namespace).
    pub fn code(&self) -> &QName {
        &self.code
    }

    /// The SOAP 1.2 subcodes, outermost first (empty in SOAP 1.1).
    pub fn subcodes(&self) -> &[QName] {
        &self.subcodes
    }

    /// The most specific code: the innermost subcode, or the code.
    pub fn most_specific_code(&self) -> &QName {
        self.subcodes.last().unwrap_or(&self.code)
    }

    /// The reason: the first `Reason/Text` (SOAP 1.2) or the `faultstring` (SOAP 1.1).
    pub fn reason(&self) -> &str {
        &self.reason
    }

    /// The SOAP 1.2 `Node`, if given.
    pub fn node(&self) -> Option<&str> {
        self.node.as_deref()
    }

    /// The SOAP 1.2 `Role` or the SOAP 1.1 `faultactor`, if given.
    pub fn role(&self) -> Option<&str> {
        self.role.as_deref()
    }

    /// The whole `Detail` (SOAP 1.2) or `detail` (SOAP 1.1) element, standalone (the
    /// namespace declarations in scope added), if the fault has one.
    pub fn detail(&self) -> Option<&Bytes> {
        self.detail.as_ref()
    }

    /// Each child element of the detail, standalone, in document order.
    pub fn detail_entries(&self) -> &[Bytes] {
        &self.detail_entries
    }

    /// The catalogue name (`NoSuchService`, `MustUnderstand`, …) when lather raised the
    /// fault: the `name` of the `lf:fault` detail entry.
    pub fn lather_fault_name(&self) -> Option<String> {
        let limits = Limits::default();
        self.detail_entries.iter().find_map(|entry| {
            let element = Element::parse(entry, &limits).ok()?;
            if !element.name().is(crate::LATHER_FAULT_NS, "fault") {
                return None;
            }
            element
                .attribute(&QName::new("", "name"))
                .map(str::to_owned)
        })
    }
}

impl fmt::Display for ReceivedFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.code)?;
        for sub in &self.subcodes {
            write!(f, " / {sub}")?;
        }
        write!(f, ": {}", self.reason)
    }
}

fn malformed(why: &str) -> Fault {
    Fault::with_reason(
        FaultKind::InvalidEnvelope,
        format!("unreadable Fault: {why}"),
    )
}

/// A QName-valued `Value`/`faultcode` element resolved in its own scope.
fn qname_of(element: &Element) -> QName {
    let text = element.text();
    let text = text.trim();
    element
        .resolve_qname(text)
        .unwrap_or_else(|| QName::new("", text))
}

fn trimmed_text(element: &Element) -> String {
    element.text().trim().to_owned()
}

/// The detail element and its entries, each standalone.
fn detail_of(
    detail: Option<&Element>,
    source: &[u8],
) -> Result<(Option<Bytes>, Vec<Bytes>), Fault> {
    let Some(detail) = detail else {
        return Ok((None, Vec::new()));
    };
    let whole = detail
        .standalone(source)
        .ok_or_else(|| malformed("detail out of range"))?;
    let entries = detail
        .elements()
        .map(|e| {
            e.standalone(source)
                .ok_or_else(|| malformed("detail entry out of range"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok((Some(whole), entries))
}

fn read_soap12(element: &Element, source: &[u8]) -> Result<ReceivedFault, Fault> {
    let q = |local: &str| QName::new(SOAP12_NS, local);
    let code_el = element
        .child(&q("Code"))
        .ok_or_else(|| malformed("no Code"))?;
    let code = code_el
        .child(&q("Value"))
        .map(qname_of)
        .ok_or_else(|| malformed("no Code/Value"))?;
    let mut subcodes = Vec::new();
    let mut at = code_el.child(&q("Subcode"));
    while let Some(sub) = at {
        if let Some(value) = sub.child(&q("Value")) {
            subcodes.push(qname_of(value));
        }
        at = sub.child(&q("Subcode"));
    }
    let reason = element
        .child(&q("Reason"))
        .and_then(|r| r.child(&q("Text")))
        .map(trimmed_text)
        .unwrap_or_default();
    let (detail, detail_entries) = detail_of(element.child(&q("Detail")), source)?;
    Ok(ReceivedFault {
        version: SoapVersion::V12,
        code,
        subcodes,
        reason,
        node: element.child(&q("Node")).map(trimmed_text),
        role: element.child(&q("Role")).map(trimmed_text),
        detail,
        detail_entries,
    })
}

fn read_soap11(element: &Element, source: &[u8]) -> Result<ReceivedFault, Fault> {
    // The children are unqualified; some senders qualify them with the envelope namespace.
    let child = |local: &str| {
        element
            .child(&QName::new("", local))
            .or_else(|| element.child(&QName::new(SOAP11_NS, local)))
    };
    let code = child("faultcode")
        .map(qname_of)
        .ok_or_else(|| malformed("no faultcode"))?;
    let (detail, detail_entries) = detail_of(child("detail"), source)?;
    Ok(ReceivedFault {
        version: SoapVersion::V11,
        code,
        subcodes: Vec::new(),
        reason: child("faultstring").map(trimmed_text).unwrap_or_default(),
        node: None,
        role: child("faultactor").map(trimmed_text),
        detail,
        detail_entries,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(bytes: &'static str) -> ReceivedFault {
        let envelope = Envelope::parse(Bytes::from_static(bytes.as_bytes()), &Limits::default())
            .expect("envelope");
        ReceivedFault::from_envelope(&envelope, &Limits::default())
            .expect("readable")
            .expect("a fault")
    }

    #[test]
    fn reads_lathers_own_soap12_fault_with_subcodes_and_detail() {
        let bytes = Fault::with_reason(FaultKind::NoSuchService, "nothing at /nope")
            .to_envelope(SoapVersion::V12);
        let envelope = Envelope::parse(bytes, &Limits::default()).unwrap();
        let fault = ReceivedFault::from_envelope(&envelope, &Limits::default())
            .unwrap()
            .unwrap();
        assert_eq!(fault.version(), SoapVersion::V12);
        assert_eq!(fault.code(), &QName::new(SOAP12_NS, "Sender"));
        let (ns, _, local) = FaultKind::NoSuchService.subcode();
        assert_eq!(fault.subcodes(), &[QName::new(ns, local)]);
        assert_eq!(fault.most_specific_code(), &QName::new(ns, local));
        assert_eq!(fault.reason(), "nothing at /nope");
        assert_eq!(fault.lather_fault_name().as_deref(), Some("NoSuchService"));
        assert_eq!(fault.detail_entries().len(), 1);
        let detail = std::str::from_utf8(fault.detail().unwrap()).unwrap();
        assert!(
            detail.contains(r#"xmlns:env="http://www.w3.org/2003/05/soap-envelope""#),
            "{detail}"
        );
    }

    #[test]
    fn reads_a_foreign_soap12_fault_with_two_subcodes_node_and_role() {
        let fault = read(concat!(
            r#"<e:Envelope xmlns:e="http://www.w3.org/2003/05/soap-envelope" xmlns:app="urn:app">"#,
            r#"<e:Body><e:Fault><e:Code><e:Value>e:Receiver</e:Value>"#,
            r#"<e:Subcode><e:Value>app:Stock</e:Value><e:Subcode><e:Value xmlns:x="urn:x">x:Empty</e:Value></e:Subcode></e:Subcode>"#,
            r#"</e:Code><e:Reason><e:Text xml:lang="en"> out of stock </e:Text><e:Text xml:lang="de">leer</e:Text></e:Reason>"#,
            r#"<e:Node>urn:node</e:Node><e:Role>urn:role</e:Role>"#,
            r#"<e:Detail><app:Item sku="7"/><app:Left>0</app:Left></e:Detail></e:Fault></e:Body></e:Envelope>"#
        ));
        assert_eq!(fault.code(), &QName::new(SOAP12_NS, "Receiver"));
        assert_eq!(
            fault.subcodes(),
            &[QName::new("urn:app", "Stock"), QName::new("urn:x", "Empty")]
        );
        assert_eq!(fault.reason(), "out of stock");
        assert_eq!(fault.node(), Some("urn:node"));
        assert_eq!(fault.role(), Some("urn:role"));
        assert_eq!(fault.lather_fault_name(), None);
        let entries: Vec<&str> = fault
            .detail_entries()
            .iter()
            .map(|b| std::str::from_utf8(b).unwrap())
            .collect();
        assert_eq!(
            entries,
            [
                r#"<app:Item xmlns:e="http://www.w3.org/2003/05/soap-envelope" xmlns:app="urn:app" sku="7"/>"#,
                r#"<app:Left xmlns:e="http://www.w3.org/2003/05/soap-envelope" xmlns:app="urn:app">0</app:Left>"#,
            ]
        );
        assert_eq!(
            fault.to_string(),
            format!("{{{SOAP12_NS}}}Receiver / {{urn:app}}Stock / {{urn:x}}Empty: out of stock")
        );
    }

    #[test]
    fn reads_a_soap11_fault() {
        let fault = read(concat!(
            r#"<SOAP-ENV:Envelope xmlns:SOAP-ENV="http://schemas.xmlsoap.org/soap/envelope/">"#,
            r#"<SOAP-ENV:Body><SOAP-ENV:Fault><faultcode>SOAP-ENV:Client</faultcode>"#,
            r#"<faultstring>Method 'ns:nope' not implemented</faultstring><faultactor>urn:a</faultactor>"#,
            r#"<detail><d>x</d></detail></SOAP-ENV:Fault></SOAP-ENV:Body></SOAP-ENV:Envelope>"#
        ));
        assert_eq!(fault.version(), SoapVersion::V11);
        assert_eq!(fault.code(), &QName::new(SOAP11_NS, "Client"));
        assert!(fault.subcodes().is_empty());
        assert_eq!(fault.reason(), "Method 'ns:nope' not implemented");
        assert_eq!(fault.role(), Some("urn:a"));
        assert_eq!(fault.detail_entries().len(), 1);
    }

    #[test]
    fn an_undeclared_code_prefix_keeps_its_text() {
        let fault = read(concat!(
            r#"<s:Envelope xmlns:s="http://schemas.xmlsoap.org/soap/envelope/"><s:Body><s:Fault>"#,
            r#"<faultcode>q:Odd</faultcode><faultstring>r</faultstring></s:Fault></s:Body></s:Envelope>"#
        ));
        assert_eq!(fault.code(), &QName::new("", "q:Odd"));
        assert_eq!(fault.detail(), None);
    }

    #[test]
    fn a_fault_without_a_code_is_malformed_and_a_plain_body_is_none() {
        let envelope = Envelope::parse(
            Bytes::from_static(
                br#"<e:Envelope xmlns:e="http://www.w3.org/2003/05/soap-envelope"><e:Body><e:Fault><e:Reason/></e:Fault></e:Body></e:Envelope>"#,
            ),
            &Limits::default(),
        )
        .unwrap();
        let err = ReceivedFault::from_envelope(&envelope, &Limits::default()).unwrap_err();
        assert_eq!(err.kind(), FaultKind::InvalidEnvelope);
        let plain = Envelope::parse(
            Bytes::from_static(
                br#"<e:Envelope xmlns:e="http://www.w3.org/2003/05/soap-envelope"><e:Body><m:x xmlns:m="urn:m"/></e:Body></e:Envelope>"#,
            ),
            &Limits::default(),
        )
        .unwrap();
        assert_eq!(
            ReceivedFault::from_envelope(&plain, &Limits::default()).unwrap(),
            None
        );
    }
}
