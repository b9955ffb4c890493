//! SOAP 1.1 and SOAP 1.2: namespaces, media types and the names that differ between them.

use std::fmt;

/// Envelope namespace of SOAP 1.1.
pub const SOAP11_NS: &str = "http://schemas.xmlsoap.org/soap/envelope/";
/// Envelope namespace of SOAP 1.2.
pub const SOAP12_NS: &str = "http://www.w3.org/2003/05/soap-envelope";

/// The SOAP version of an envelope, told by its namespace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SoapVersion {
    /// SOAP 1.1: `text/xml`, `SOAPAction` header, `actor`, faults `Client`/`Server`.
    V11,
    /// SOAP 1.2: `application/soap+xml`, `action` parameter, `role`/`relay`, `Sender`/`Receiver`.
    V12,
}

impl SoapVersion {
    /// The version whose envelope namespace is `ns`, if any.
    pub fn from_namespace(ns: &str) -> Option<SoapVersion> {
        match ns {
            SOAP11_NS => Some(SoapVersion::V11),
            SOAP12_NS => Some(SoapVersion::V12),
            _ => None,
        }
    }

    /// The envelope namespace URI.
    pub fn namespace(self) -> &'static str {
        match self {
            SoapVersion::V11 => SOAP11_NS,
            SoapVersion::V12 => SOAP12_NS,
        }
    }

    /// The media type without parameters: `text/xml` or `application/soap+xml`.
    pub fn media_type(self) -> &'static str {
        match self {
            SoapVersion::V11 => "text/xml",
            SoapVersion::V12 => "application/soap+xml",
        }
    }

    /// The full `Content-Type` of a message of this version, UTF-8.
    pub const fn content_type(self) -> &'static str {
        match self {
            SoapVersion::V11 => "text/xml; charset=utf-8",
            SoapVersion::V12 => "application/soap+xml; charset=utf-8",
        }
    }

    /// The prefix lather writes for the envelope namespace by default.
    pub fn default_prefix(self) -> &'static str {
        match self {
            SoapVersion::V11 => "soap",
            SoapVersion::V12 => "env",
        }
    }

    /// The attribute naming a header block's target: `actor` (1.1) or `role` (1.2).
    pub fn role_attribute(self) -> &'static str {
        match self {
            SoapVersion::V11 => "actor",
            SoapVersion::V12 => "role",
        }
    }

    /// The role URI meaning "the next SOAP node".
    pub fn next_role(self) -> &'static str {
        match self {
            SoapVersion::V11 => "http://schemas.xmlsoap.org/soap/actor/next",
            SoapVersion::V12 => "http://www.w3.org/2003/05/soap-envelope/role/next",
        }
    }
}

impl fmt::Display for SoapVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SoapVersion::V11 => "SOAP 1.1",
            SoapVersion::V12 => "SOAP 1.2",
        })
    }
}
