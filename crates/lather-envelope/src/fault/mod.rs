//! Faults: the catalogue, the [`Fault`] value and its SOAP 1.1 / 1.2 serialisation.

mod addressing;
mod application;
pub mod bounds;
mod catalogue;
mod understood;

use bounds::MAX_DETAIL_BYTES;

pub use application::MAX_SUBCODES;

pub use catalogue::{
    FaultCode, FaultKind, FaultSpec, LATHER_FAULT_NS, WSA04_NS, WSA10_NS, WSE04_NS, WSE11_NS,
    WSN_B_NS, WSSE_NS,
};

use crate::escape::escape_text;
use crate::{QName, SOAP11_NS, SOAP12_NS, SoapVersion};
use bytes::Bytes;
use std::borrow::Cow;
use std::fmt;
use understood::NotUnderstood;

/// A SOAP fault lather raises: a catalogue kind plus the specific reason.
///
/// Turn it into a response with [`Fault::to_envelope`] and [`Fault::http_status`].
///
/// Every part a request can influence is bounded, so a fault's rendered size stays below a
/// constant whatever the request held: the reason ([`MAX_REASON_BYTES`](bounds::MAX_REASON_BYTES)), the
/// not-understood list ([`MAX_NOT_UNDERSTOOD`](bounds::MAX_NOT_UNDERSTOOD) blocks within [`MAX_NOT_UNDERSTOOD_BYTES`](bounds::MAX_NOT_UNDERSTOOD_BYTES)),
/// the extra detail ([`MAX_DETAIL_BYTES`](bounds::MAX_DETAIL_BYTES)) and the URIs copied from the request
/// ([`MAX_URI_BYTES`](bounds::MAX_URI_BYTES)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fault {
    kind: FaultKind,
    reason: Cow<'static, str>,
    /// The MustUnderstand list (boxed: rare).
    not_understood: Option<Box<NotUnderstood>>,
    addressing: Option<Box<AddressingDetail>>,
    /// Serialised elements written into the detail after `lf:fault` (boxed: rare).
    detail: Option<Box<str>>,
    /// A service's own codes (boxed: rare).
    application: Option<Box<application::Application>>,
}

/// What an addressing fault says beyond its kind (boxed: most faults have none).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct AddressingDetail {
    problem_header: Option<QName>,
    relates_to: Option<String>,
    /// `(WS-Addressing namespace, wsa:Action)` for a fault whose specification binds it to
    /// WS-Addressing though its kind is not an addressing fault (WS-Eventing).
    action: Option<(&'static str, String)>,
}

impl Fault {
    /// A fault of `kind` with the catalogue's default reason.
    pub fn new(kind: FaultKind) -> Self {
        Fault {
            kind,
            reason: Cow::Borrowed(kind.spec().reason),
            not_understood: None,
            addressing: None,
            detail: None,
            application: None,
        }
    }

    /// A fault of `kind` whose reason says specifically what went wrong (cut to
    /// [`MAX_REASON_BYTES`](bounds::MAX_REASON_BYTES)).
    pub fn with_reason(kind: FaultKind, reason: impl Into<Cow<'static, str>>) -> Self {
        Fault {
            kind,
            reason: bounds::cap_reason(reason.into()),
            not_understood: None,
            addressing: None,
            detail: None,
            application: None,
        }
    }

    /// A `MustUnderstand` fault for the mandatory header blocks `names` (in message order):
    /// it lists the first ones (see [`Fault::not_understood`]) and its reason names as many
    /// as fit, then says how many more there were. Only the listed names are cloned.
    pub fn must_understand<'a>(names: impl IntoIterator<Item = &'a QName>) -> Self {
        let list = NotUnderstood::collect(names);
        let mut fault = Fault::with_reason(FaultKind::MustUnderstand, list.reason());
        fault.not_understood = Some(Box::new(list));
        fault
    }

    /// Sets the header blocks a MustUnderstand fault reports as not understood: at most
    /// [`MAX_NOT_UNDERSTOOD`](bounds::MAX_NOT_UNDERSTOOD) of them, within [`MAX_NOT_UNDERSTOOD_BYTES`](bounds::MAX_NOT_UNDERSTOOD_BYTES) of names; the
    /// others are only counted ([`Fault::not_understood_omitted`]).
    pub fn not_understood(mut self, names: Vec<QName>) -> Self {
        self.not_understood = (!names.is_empty()).then(|| Box::new(NotUnderstood::collect(&names)));
        self
    }

    /// Names the header block a WS-Addressing 1.0 fault is about: written as
    /// `wsa:ProblemHeaderQName`, in `env:Detail` (SOAP 1.2) or in a `wsa:FaultDetail` header
    /// (SOAP 1.1), as the WS-Addressing 1.0 SOAP binding places it. Other kinds ignore it.
    pub fn problem_header(mut self, name: QName) -> Self {
        self.addressing.get_or_insert_default().problem_header = Some(name);
        self
    }

    /// The `wsa:MessageID` of the request an addressing fault answers: the fault envelope
    /// carries `wsa:RelatesTo` with it. Kinds other than addressing faults ignore it.
    pub fn relates_to(mut self, message_id: impl Into<String>) -> Self {
        self.addressing.get_or_insert_default().relates_to = Some(message_id.into());
        self
    }

    /// Adds `elements` — well-formed XML elements, each declaring the namespaces it uses —
    /// to the fault's detail (`detail`/`env:Detail`), after `lf:fault`; e.g. the
    /// `wse:SupportedDialect` list of WS-Eventing's FilteringRequestedUnavailable.
    ///
    /// Elements that would take the detail beyond [`MAX_DETAIL_BYTES`](bounds::MAX_DETAIL_BYTES) are left out.
    pub fn with_detail(mut self, elements: impl Into<String>) -> Self {
        let elements: String = elements.into();
        let before = self.detail.as_deref().map_or(0, str::len);
        if before + elements.len() > MAX_DETAIL_BYTES {
            return self;
        }
        self.detail = Some(match self.detail.take() {
            Some(before) => format!("{before}{elements}").into_boxed_str(),
            None => elements.into_boxed_str(),
        });
        self
    }

    /// The elements added with [`Fault::with_detail`], if any.
    pub fn extra_detail(&self) -> Option<&str> {
        self.detail.as_deref()
    }

    /// The mandatory header blocks a `MustUnderstand` fault lists (empty for other faults).
    pub fn not_understood_names(&self) -> &[QName] {
        self.not_understood.as_ref().map_or(&[], |l| l.names())
    }

    /// How many not-understood blocks the fault counts but does not list.
    pub fn not_understood_omitted(&self) -> usize {
        self.not_understood.as_ref().map_or(0, |l| l.more())
    }

    /// Binds the fault to WS-Addressing version `wsa_ns` with `wsa:Action` = `action`, as
    /// specifications built on WS-Addressing do for their faults (WS-Eventing: the WSA fault
    /// action for 2004/08, `http://www.w3.org/2011/03/ws-evt/fault` for 2011). The envelope
    /// then carries `wsa:Action` and, if given, `wsa:RelatesTo`. An addressing fault keeps
    /// its own namespace and ignores this.
    pub fn addressed(mut self, wsa_ns: &'static str, action: impl Into<String>) -> Self {
        self.addressing.get_or_insert_default().action = Some((wsa_ns, action.into()));
        self
    }

    /// The WS-Addressing namespace and `wsa:Action` the fault envelope carries, if any (an
    /// action longer than [`MAX_URI_BYTES`](bounds::MAX_URI_BYTES) is left out).
    pub fn addressing_action(&self) -> Option<(&'static str, String)> {
        if let Some(ns) = self.kind.addressing_namespace() {
            return Some((ns, format!("{ns}/fault")));
        }
        let (ns, action) = self.addressing.as_ref()?.action.as_ref()?;
        Some((*ns, bounds::short_uri(action)?.to_owned()))
    }

    /// The header block the fault is about, if one was named.
    pub fn problem_header_name(&self) -> Option<&QName> {
        self.addressing.as_ref()?.problem_header.as_ref()
    }

    /// The request's `wsa:MessageID` the fault relates to, if one was given.
    pub fn relates_to_id(&self) -> Option<&str> {
        self.addressing.as_ref()?.relates_to.as_deref()
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
        let status = self
            .application
            .as_ref()
            .map_or(self.kind.spec().http_status, |a| a.status);
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
        out.push_str(r#"">"#);
        if let Some((ns, action)) = self.addressing_action() {
            out.push_str("<soap:Header>");
            addressing::write_headers(self, ns, &action, SoapVersion::V11, out);
            out.push_str("</soap:Header>");
        }
        out.push_str("<soap:Body><soap:Fault>");
        if let Some(app) = &self.application {
            app.write_soap11_code(out);
        } else if self.kind.has_foreign_subcode() {
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
        out.push_str("<env:Body><env:Fault><env:Code>");
        if let Some(app) = &self.application {
            app.write_soap12_code(out);
        } else {
            out.push_str("<env:Value>env:");
            out.push_str(spec.code.soap12_local());
            out.push_str("</env:Value>");
        }
        if spec.has_subcode && self.application.is_none() {
            let (ns, prefix, local) = self.kind.subcode();
            out.push_str(&format!(
                r#"<env:Subcode><env:Value xmlns:{prefix}="{ns}">{prefix}:{local}</env:Value>"#
            ));
            if let Some((ns, prefix, local)) = self.kind.subsubcode() {
                out.push_str(&format!(
                    r#"<env:Subcode><env:Value xmlns:{prefix}="{ns}">{prefix}:{local}</env:Value></env:Subcode>"#
                ));
            }
            out.push_str("</env:Subcode>");
        }
        out.push_str(r#"</env:Code><env:Reason><env:Text xml:lang="en">"#);
        out.push_str(&escape_text(&self.reason));
        out.push_str("</env:Text></env:Reason><env:Detail>");
        if self.kind.addressing_namespace() == Some(WSA10_NS) {
            addressing::write_problem_header(self, out);
        }
        self.write_detail(out);
        out.push_str("</env:Detail></env:Fault></env:Body></env:Envelope>");
    }

    /// SOAP 1.2 carries `Upgrade` on VersionMismatch, `NotUnderstood` on MustUnderstand and
    /// the addressing headers on WS-Addressing faults.
    fn write_soap12_header(&self, out: &mut String) {
        if let Some((ns, action)) = self.addressing_action() {
            out.push_str("<env:Header>");
            addressing::write_headers(self, ns, &action, SoapVersion::V12, out);
            out.push_str("</env:Header>");
            return;
        }
        if self.kind == FaultKind::VersionMismatch {
            out.push_str("<env:Header><env:Upgrade>");
            for (i, ns) in [SOAP12_NS, SOAP11_NS].iter().enumerate() {
                out.push_str(&format!(
                    r#"<env:SupportedEnvelope qname="v{i}:Envelope" xmlns:v{i}="{ns}"/>"#
                ));
            }
            out.push_str("</env:Upgrade></env:Header>");
        } else if let Some(list) = &self.not_understood
            && !list.names().is_empty()
        {
            list.write_soap12_header(out);
        }
    }

    fn write_detail(&self, out: &mut String) {
        let spec = self.kind.spec();
        if self.application.is_none() {
            out.push_str(&format!(
                r#"<lf:fault xmlns:lf="{LATHER_FAULT_NS}" code="{}" name="{}"/>"#,
                spec.id, spec.name
            ));
        }
        if let Some(detail) = &self.detail {
            out.push_str(detail);
        }
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
