//! Application faults: a service's own codes, outside lather's catalogue.

use super::Fault;
use super::catalogue::{FaultCode, FaultKind};
use crate::QName;
use crate::escape::escape_attribute;
use std::borrow::Cow;

/// The most subcodes an application fault carries (more are left out).
pub const MAX_SUBCODES: usize = 8;

/// What an application fault says instead of its catalogue row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Application {
    pub(super) code: FaultCode,
    pub(super) subcodes: Vec<QName>,
    pub(super) status: u16,
}

impl Fault {
    /// A fault a service raises with its own codes: `code` (normally
    /// [`FaultCode::Sender`] — the request was wrong — or [`FaultCode::Receiver`]), then
    /// `subcodes` from the most general to the most specific (QNames in the service's
    /// namespaces; at most [`MAX_SUBCODES`]), and the reason. Add the service's detail
    /// elements with [`Fault::with_detail`]; the status is 400 for Sender faults (500 in
    /// SOAP 1.1) and 500 otherwise, unless [`Fault::with_status`] sets another.
    ///
    /// ```
    /// use lather_envelope::{Fault, FaultCode, QName, SoapVersion};
    /// let fault = Fault::application(FaultCode::Sender, [QName::new("urn:bank", "InsufficientFunds")], "balance too low")
    ///     .with_detail(r#"<b:balance xmlns:b="urn:bank">12</b:balance>"#);
    /// let xml = String::from_utf8(fault.to_envelope(SoapVersion::V12).to_vec()).unwrap();
    /// assert!(xml.contains(r#"<env:Value xmlns:a0="urn:bank">a0:InsufficientFunds</env:Value>"#));
    /// assert!(xml.contains("<b:balance"));
    /// assert_eq!(fault.http_status(SoapVersion::V12), 400);
    /// ```
    pub fn application(
        code: FaultCode,
        subcodes: impl IntoIterator<Item = QName>,
        reason: impl Into<Cow<'static, str>>,
    ) -> Self {
        let status = if code == FaultCode::Receiver {
            500
        } else {
            400
        };
        let mut fault = Fault::with_reason(FaultKind::Application, reason);
        fault.application = Some(Box::new(Application {
            code,
            subcodes: subcodes.into_iter().take(MAX_SUBCODES).collect(),
            status,
        }));
        fault
    }

    /// Sets an application fault's HTTP status (a status outside 400–599 is ignored, as is
    /// the call on a catalogue fault, whose status is the catalogue's).
    pub fn with_status(mut self, status: u16) -> Self {
        if let Some(app) = &mut self.application
            && (400..600).contains(&status)
        {
            app.status = status;
        }
        self
    }

    /// The SOAP code of an application fault (a catalogue fault's is its row's).
    pub fn code(&self) -> FaultCode {
        self.application
            .as_ref()
            .map_or(self.kind.spec().code, |a| a.code)
    }

    /// An application fault's subcodes, most general first (empty for catalogue faults).
    pub fn subcodes(&self) -> &[QName] {
        self.application.as_ref().map_or(&[], |a| &a.subcodes)
    }
}

impl Application {
    /// The SOAP 1.1 `faultcode`: the most specific subcode, else `soap:Client`/`soap:Server`.
    pub(super) fn write_soap11_code(&self, out: &mut String) {
        match self.subcodes.last() {
            Some(q) => out.push_str(&format!(
                r#"<faultcode xmlns:a0="{}">a0:{}</faultcode>"#,
                escape_attribute(q.namespace()),
                q.local()
            )),
            None => {
                out.push_str("<faultcode>soap:");
                out.push_str(self.code.soap11_local());
                out.push_str("</faultcode>");
            }
        }
    }

    /// The SOAP 1.2 `env:Code`'s content: the value and the nested subcodes.
    pub(super) fn write_soap12_code(&self, out: &mut String) {
        out.push_str("<env:Value>env:");
        out.push_str(self.code.soap12_local());
        out.push_str("</env:Value>");
        for (i, q) in self.subcodes.iter().enumerate() {
            out.push_str(&format!(
                r#"<env:Subcode><env:Value xmlns:a{i}="{}">a{i}:{}</env:Value>"#,
                escape_attribute(q.namespace()),
                q.local()
            ));
        }
        for _ in &self.subcodes {
            out.push_str("</env:Subcode>");
        }
    }
}
