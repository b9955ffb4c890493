//! What a service answers.

use bytes::Bytes;
use lather_envelope::{Envelope, SoapVersion};

/// A service's answer to one request.
#[derive(Debug)]
pub enum Reply {
    /// A SOAP message (status 200; 500 when it is a fault). The response stages run on it
    /// as it is, without writing and parsing it again.
    Envelope(Envelope),
    /// A complete SOAP envelope the service wrote itself in this version (status 200). It is
    /// parsed only when response stages must run on it.
    Written(SoapVersion, Bytes),
    /// Nothing to answer (a one-way message): HTTP 202 without a body.
    Accepted,
    /// An HTTP answer passed on as it is (status, headers, body): a gateway's backend
    /// answer. A SOAP body is parsed only when response or fault stages must run on it.
    Http(http::Response<Bytes>),
}

impl Reply {
    /// A document that is not a SOAP message (a WSDL, an XML schema) with its content type,
    /// status 200.
    ///
    /// ```
    /// let wsdl = lather_pipeline::Reply::document("text/xml; charset=utf-8", "<definitions/>");
    /// assert!(matches!(wsdl, lather_pipeline::Reply::Http(_)));
    /// ```
    pub fn document(content_type: &'static str, body: impl Into<Bytes>) -> Reply {
        let mut response = http::Response::new(body.into());
        response.headers_mut().insert(
            http::header::CONTENT_TYPE,
            http::HeaderValue::from_static(content_type),
        );
        Reply::Http(response)
    }
}
