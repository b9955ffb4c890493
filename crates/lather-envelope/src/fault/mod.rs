//! Faults: the catalogue, the [`Fault`] value and its SOAP 1.1 / 1.2 serialisation.

mod catalogue;

pub use catalogue::{FaultCode, FaultKind, FaultSpec, LATHER_FAULT_NS, WSSE_NS};

use crate::escape::{escape_attribute, escape_text};
use crate::{QName, SOAP11_NS, SOAP12_NS, SoapVersion};
use bytes::Bytes;
use std::borrow::Cow;
use std::fmt;

/// A SOAP fault lather raises: a catalogue kind plus the specific reason.
///
/// Turn it into a response with [`Fault::to_envelope`] and [`Fault::http_status`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fault {
    kind: FaultKind,
    reason: Cow<'static, str>,
    not_understood: Vec<QName>,
}

impl Fault {
    /// A fault of `kind` with the catalogue's default reason.
    pub fn new(kind: FaultKind) -> Self {
        Fault {
            kind,
            reason: Cow::Borrowed(kind.spec().reason),
            not_understood: Vec::new(),
        }
    }

    /// A fault of `kind` whose reason says specifically what went wrong.
    pub fn with_reason(kind: FaultKind, reason: impl Into<Cow<'static, str>>) -> Self {
        Fault {
            kind,
            reason: reason.into(),
            not_understood: Vec::new(),
        }
    }

    /// Adds the header blocks a MustUnderstand fault reports as not understood.
    pub fn not_understood(mut self, names: Vec<QName>) -> Self {
        self.not_understood = names;
        self
    }

    /// The catalogue kind.
    pub fn kind(&self) -> FaultKind {
        self.kind
    }

    /// The human-readable reason.
    pub fn reason(&self) -> &str {
        &self.reason
    }

    /// The HTTP status to answer with in `version`.
    ///
    /// SOAP 1.2 uses the catalogue status. For SOAP 1.1 a fault about the message's content
    /// (status 400) is answered with 500 as SOAP 1.1 §6.2 and WS-I BP R1126 require; refusals
    /// at the transport level (404, 405, 413, 415, 5xx) keep their status.
    pub fn http_status(&self, version: SoapVersion) -> u16 {
        let status = self.kind.spec().http_status;
        match (version, status) {
            (SoapVersion::V11, 400) => 500,
            _ => status,
        }
    }

    /// The complete fault envelope in `version`.
    pub fn to_envelope(&self, version: SoapVersion) -> Bytes {
        let mut out = String::with_capacity(640 + self.reason.len());
        out.push_str(r#"<?xml version="1.0" encoding="UTF-8"?>"#);
        match version {
            SoapVersion::V11 => self.write_soap11(&mut out),
            SoapVersion::V12 => self.write_soap12(&mut out),
        }
        Bytes::from(out)
    }

    fn write_soap11(&self, out: &mut String) {
        let spec = self.kind.spec();
        out.push_str(r#"<soap:Envelope xmlns:soap=""#);
        out.push_str(SOAP11_NS);
        out.push_str(r#""><soap:Body><soap:Fault>"#);
        if self.kind.has_foreign_subcode() {
            let (ns, prefix, local) = self.kind.subcode();
            out.push_str(&format!(
                r#"<faultcode xmlns:{prefix}="{ns}">{prefix}:{local}</faultcode>"#
            ));
        } else {
            out.push_str("<faultcode>soap:");
            out.push_str(spec.code.soap11_local());
            out.push_str("</faultcode>");
        }
        out.push_str("<faultstring>");
        out.push_str(&escape_text(&self.reason));
        out.push_str("</faultstring><detail>");
        self.write_detail(out);
        out.push_str("</detail></soap:Fault></soap:Body></soap:Envelope>");
    }

    fn write_soap12(&self, out: &mut String) {
        let spec = self.kind.spec();
        out.push_str(r#"<env:Envelope xmlns:env=""#);
        out.push_str(SOAP12_NS);
        out.push_str(r#"">"#);
        self.write_soap12_header(out);
        out.push_str("<env:Body><env:Fault><env:Code><env:Value>env:");
        out.push_str(spec.code.soap12_local());
        out.push_str("</env:Value>");
        if spec.has_subcode {
            let (ns, prefix, local) = self.kind.subcode();
            out.push_str(&format!(
                r#"<env:Subcode><env:Value xmlns:{prefix}="{ns}">{prefix}:{local}</env:Value></env:Subcode>"#
            ));
        }
        out.push_str(r#"</env:Code><env:Reason><env:Text xml:lang="en">"#);
        out.push_str(&escape_text(&self.reason));
        out.push_str("</env:Text></env:Reason><env:Detail>");
        self.write_detail(out);
        out.push_str("</env:Detail></env:Fault></env:Body></env:Envelope>");
    }

    /// SOAP 1.2 carries `Upgrade` on VersionMismatch and `NotUnderstood` on MustUnderstand.
    fn write_soap12_header(&self, out: &mut String) {
        if self.kind == FaultKind::VersionMismatch {
            out.push_str("<env:Header><env:Upgrade>");
            for (i, ns) in [SOAP12_NS, SOAP11_NS].iter().enumerate() {
                out.push_str(&format!(
                    r#"<env:SupportedEnvelope qname="v{i}:Envelope" xmlns:v{i}="{ns}"/>"#
                ));
            }
            out.push_str("</env:Upgrade></env:Header>");
        } else if !self.not_understood.is_empty() {
            out.push_str("<env:Header>");
            for (i, name) in self.not_understood.iter().enumerate() {
                out.push_str(&format!(
                    r#"<env:NotUnderstood qname="q{i}:{}" xmlns:q{i}="{}"/>"#,
                    escape_attribute(name.local()),
                    escape_attribute(name.namespace())
                ));
            }
            out.push_str("</env:Header>");
        }
    }

    fn write_detail(&self, out: &mut String) {
        let spec = self.kind.spec();
        out.push_str(&format!(
            r#"<lf:fault xmlns:lf="{LATHER_FAULT_NS}" code="{}" name="{}"/>"#,
            spec.id, spec.name
        ));
    }
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let spec = self.kind.spec();
        write!(f, "{} ({}): {}", spec.name, spec.id, self.reason)
    }
}

impl std::error::Error for Fault {}

impl From<FaultKind> for Fault {
    fn from(kind: FaultKind) -> Self {
        Fault::new(kind)
    }
}
