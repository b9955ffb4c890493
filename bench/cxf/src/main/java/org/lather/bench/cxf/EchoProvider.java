package org.lather.bench.cxf;

import javax.xml.transform.Source;

import jakarta.xml.ws.Provider;
import jakarta.xml.ws.Service;
import jakarta.xml.ws.ServiceMode;
import jakarta.xml.ws.WebServiceProvider;

/**
 * The echo service: in PAYLOAD mode CXF hands over the SOAP Body's content and wraps what is
 * returned in a new SOAP 1.1 envelope, so returning the request payload answers with the
 * request's Body content, as lather's built-in echo does.
 */
@WebServiceProvider(
        targetNamespace = "urn:lather:echo",
        serviceName = "EchoService",
        portName = "EchoSoap11Port")
@ServiceMode(Service.Mode.PAYLOAD)
public final class EchoProvider implements Provider<Source> {
    @Override
    public Source invoke(Source request) {
        return request;
    }
}
