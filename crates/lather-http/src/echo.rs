//! The built-in echo service: answers with the request's Body content, in the same SOAP
//! version, and describes itself in WSDL at `?wsdl`.

use bytes::Bytes;
use lather_envelope::escape::escape_attribute;
use lather_envelope::{Envelope, EnvelopeBuilder, QName};
use lather_pipeline::{Reply, ServiceFuture, ServiceRequest, SoapService};

/// The built-in echo service (`builtin = "echo"`): answers with the request's Body content
/// in the same SOAP version, relating the answer to the request's `wsa:MessageID`, and
/// describes itself in WSDL.
#[derive(Debug, Clone, Copy, Default)]
pub struct Echo;

impl SoapService for Echo {
    fn call<'a>(&'a self, request: ServiceRequest<'a>) -> ServiceFuture<'a> {
        let version = request.envelope.version();
        let answer = respond(&request.envelope);
        Box::pin(async move { Ok(Reply::Written(version, answer)) })
    }

    fn wsdl<'a>(&'a self, location: &'a str) -> ServiceFuture<'a> {
        let document = wsdl(location);
        Box::pin(async move { Ok(Reply::document("text/xml; charset=utf-8", document)) })
    }

    fn understood(&self) -> Vec<QName> {
        UNDERSTOOD
            .iter()
            .map(|(ns, local)| QName::new(*ns, *local))
            .collect()
    }
}

/// WS-Addressing 1.0.
const WSA10_NS: &str = "http://www.w3.org/2005/08/addressing";
/// WS-Addressing 2004/08 (submission).
const WSA04_NS: &str = "http://schemas.xmlsoap.org/ws/2004/08/addressing";

/// The header blocks echo processes itself.
pub(crate) const UNDERSTOOD: [(&str, &str); 2] = [(WSA10_NS, "MessageID"), (WSA04_NS, "MessageID")];

/// The echo response for `request`: its Body content (with the namespace declarations in
/// scope moved onto the new Body) and, when the request has a `wsa:MessageID`, a
/// `wsa:RelatesTo` naming it in the same WS-Addressing version.
pub(crate) fn respond(request: &Envelope) -> Bytes {
    let mut builder = EnvelopeBuilder::new(request.version()).body_from(request);
    let message_id = request.headers().iter().find_map(|block| {
        let ns = [WSA10_NS, WSA04_NS]
            .into_iter()
            .find(|ns| block.name().is(ns, "MessageID"))?;
        Some((ns, request.header_text(block)?))
    });
    if let Some((ns, id)) = message_id {
        builder = builder.header(EnvelopeBuilder::text_element(ns, "wsa", "RelatesTo", &id));
    }
    builder.build()
}

/// The echo service's WSDL 1.1, with SOAP 1.1 and 1.2 ports at `location`.
pub(crate) fn wsdl(location: &str) -> Bytes {
    let location = escape_attribute(location);
    Bytes::from(format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<wsdl:definitions name="Echo" targetNamespace="urn:lather:echo"
    xmlns:wsdl="http://schemas.xmlsoap.org/wsdl/"
    xmlns:soap="http://schemas.xmlsoap.org/wsdl/soap/"
    xmlns:soap12="http://schemas.xmlsoap.org/wsdl/soap12/"
    xmlns:xs="http://www.w3.org/2001/XMLSchema"
    xmlns:tns="urn:lather:echo">
  <wsdl:documentation>lather echo: answers with the request's Body content.</wsdl:documentation>
  <wsdl:types>
    <xs:schema targetNamespace="urn:lather:echo" elementFormDefault="unqualified">
      <xs:element name="echo">
        <xs:complexType>
          <xs:sequence><xs:any minOccurs="0" maxOccurs="unbounded" processContents="lax"/></xs:sequence>
          <xs:anyAttribute processContents="lax"/>
        </xs:complexType>
      </xs:element>
    </xs:schema>
  </wsdl:types>
  <wsdl:message name="echoMessage"><wsdl:part name="parameters" element="tns:echo"/></wsdl:message>
  <wsdl:portType name="EchoPortType">
    <wsdl:operation name="echo">
      <wsdl:input message="tns:echoMessage"/>
      <wsdl:output message="tns:echoMessage"/>
    </wsdl:operation>
  </wsdl:portType>
  <wsdl:binding name="EchoSoap11" type="tns:EchoPortType">
    <soap:binding style="document" transport="http://schemas.xmlsoap.org/soap/http"/>
    <wsdl:operation name="echo">
      <soap:operation soapAction="urn:lather:echo#echo"/>
      <wsdl:input><soap:body use="literal"/></wsdl:input>
      <wsdl:output><soap:body use="literal"/></wsdl:output>
    </wsdl:operation>
  </wsdl:binding>
  <wsdl:binding name="EchoSoap12" type="tns:EchoPortType">
    <soap12:binding style="document" transport="http://schemas.xmlsoap.org/soap/http"/>
    <wsdl:operation name="echo">
      <soap12:operation soapAction="urn:lather:echo#echo"/>
      <wsdl:input><soap12:body use="literal"/></wsdl:input>
      <wsdl:output><soap12:body use="literal"/></wsdl:output>
    </wsdl:operation>
  </wsdl:binding>
  <wsdl:service name="EchoService">
    <wsdl:port name="EchoSoap11Port" binding="tns:EchoSoap11"><soap:address location="{location}"/></wsdl:port>
    <wsdl:port name="EchoSoap12Port" binding="tns:EchoSoap12"><soap12:address location="{location}"/></wsdl:port>
  </wsdl:service>
</wsdl:definitions>
"#
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use lather_envelope::{Limits, QName, SoapVersion};

    #[test]
    fn echo_keeps_payload_namespaces_and_relates_to_the_message_id() {
        let req = r#"<s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope" xmlns:m="urn:m">
<s:Header><a:MessageID xmlns:a="http://www.w3.org/2005/08/addressing">urn:uuid:1</a:MessageID></s:Header>
<s:Body><m:ping>x</m:ping></s:Body></s:Envelope>"#;
        let env = Envelope::parse(Bytes::from_static(req.as_bytes()), &Limits::default()).unwrap();
        let out = respond(&env);
        let reply = Envelope::parse(out, &Limits::default()).unwrap();
        assert_eq!(reply.version(), SoapVersion::V12);
        assert_eq!(reply.operation(), Some(&QName::new("urn:m", "ping")));
        let relates = reply.header(&QName::new(WSA10_NS, "RelatesTo")).unwrap();
        assert_eq!(reply.header_text(relates).as_deref(), Some("urn:uuid:1"));
    }

    #[test]
    fn wsdl_is_an_envelope_free_well_formed_document_naming_the_location() {
        let doc = wsdl("http://h:1/echo?a&b");
        let text = std::str::from_utf8(&doc).unwrap();
        assert!(text.contains(r#"<soap:address location="http://h:1/echo?a&amp;b"/>"#));
        assert!(text.contains(r#"<soap12:address location="http://h:1/echo?a&amp;b"/>"#));
    }
}
