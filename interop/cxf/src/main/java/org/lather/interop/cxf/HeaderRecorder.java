package org.lather.interop.cxf;

import jakarta.xml.soap.SOAPException;
import jakarta.xml.soap.SOAPHeader;
import jakarta.xml.ws.handler.MessageContext;
import jakarta.xml.ws.handler.soap.SOAPHandler;
import jakarta.xml.ws.handler.soap.SOAPMessageContext;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import javax.xml.namespace.QName;
import org.w3c.dom.Element;
import org.w3c.dom.Node;

/**
 * A JAX-WS handler on the sink that keeps what came in the SOAP header of each inbound
 * message: the WS-Addressing 1.0 headers by name and every other header block (the
 * NotifyTo EPR's reference parameters) with its wsa:IsReferenceParameter marker. The
 * endpoint reads them from the message context under {@link #KEY}.
 */
final class HeaderRecorder implements SOAPHandler<SOAPMessageContext> {
    static final String KEY = "lather.interop.headers";
    static final String WSA = "http://www.w3.org/2005/08/addressing";

    @Override
    public Set<QName> getHeaders() {
        return Set.of();
    }

    @Override
    public boolean handleMessage(SOAPMessageContext context) {
        if ((Boolean) context.get(MessageContext.MESSAGE_OUTBOUND_PROPERTY)) {
            return true;
        }
        Map<String, Object> seen = new LinkedHashMap<>();
        List<Map<String, Object>> params = new ArrayList<>();
        try {
            SOAPHeader header = context.getMessage().getSOAPHeader();
            seen.put("soap_ns", context.getMessage().getSOAPPart().getEnvelope().getNamespaceURI());
            if (header != null) {
                for (Node n = header.getFirstChild(); n != null; n = n.getNextSibling()) {
                    if (!(n instanceof Element e)) {
                        continue;
                    }
                    if (WSA.equals(e.getNamespaceURI())) {
                        seen.put(e.getLocalName(), e.getTextContent().trim());
                    } else {
                        Map<String, Object> p = new LinkedHashMap<>();
                        p.put("namespace", e.getNamespaceURI());
                        p.put("name", e.getLocalName());
                        p.put("text", e.getTextContent());
                        p.put("is_reference_parameter", e.getAttributeNS(WSA, "IsReferenceParameter"));
                        params.add(p);
                    }
                }
            }
        } catch (SOAPException ex) {
            throw new IllegalStateException(ex);
        }
        seen.put("headers", params);
        context.put(KEY, seen);
        context.setScope(KEY, MessageContext.Scope.APPLICATION);
        return true;
    }

    @Override
    public boolean handleFault(SOAPMessageContext context) {
        return true;
    }

    @Override
    public void close(MessageContext context) {
    }
}
