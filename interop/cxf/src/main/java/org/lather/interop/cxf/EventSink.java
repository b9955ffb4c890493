package org.lather.interop.cxf;

import jakarta.jws.Oneway;
import jakarta.jws.WebParam;
import jakarta.jws.WebService;
import jakarta.jws.soap.SOAPBinding;
import jakarta.xml.ws.Action;
import jakarta.xml.ws.soap.Addressing;

/**
 * The event sink's port type (unwrapped delivery, WS-Eventing 2011 section 4): one one-way
 * operation per event type, told apart by its wsa:Action. CXF's notificator calls it as a
 * client; the consumer mode serves it.
 */
@WebService(targetNamespace = EventSink.NS, name = "EventSink")
@SOAPBinding(parameterStyle = SOAPBinding.ParameterStyle.BARE)
@Addressing(enabled = true, required = true)
public interface EventSink {
    /** The events' namespace. */
    String NS = "urn:lather:interop:cxf";
    /** The wsa:Action of a Temperature notification. */
    String ACTION = "urn:lather:interop:cxf/Temperature";

    @Oneway
    @Action(input = ACTION)
    void temperature(@WebParam(name = "Temperature", targetNamespace = NS) TemperatureEvent event);
}
