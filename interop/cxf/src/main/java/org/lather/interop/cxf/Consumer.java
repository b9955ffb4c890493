package org.lather.interop.cxf;

import jakarta.xml.soap.SOAPConstants;
import jakarta.xml.ws.soap.SOAPFaultException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import javax.xml.parsers.DocumentBuilderFactory;
import org.apache.cxf.endpoint.Server;
import org.apache.cxf.jaxws.JaxWsProxyFactoryBean;
import org.apache.cxf.jaxws.JaxWsServerFactoryBean;
import org.apache.cxf.ws.addressing.AttributedURIType;
import org.apache.cxf.ws.addressing.EndpointReferenceType;
import org.apache.cxf.ws.addressing.ReferenceParametersType;
import org.apache.cxf.ws.eventing.DeliveryType;
import org.apache.cxf.ws.eventing.ExpirationType;
import org.apache.cxf.ws.eventing.FilterType;
import org.apache.cxf.ws.eventing.FormatType;
import org.apache.cxf.ws.eventing.GetStatus;
import org.apache.cxf.ws.eventing.GetStatusResponse;
import org.apache.cxf.ws.eventing.ObjectFactory;
import org.apache.cxf.ws.eventing.Renew;
import org.apache.cxf.ws.eventing.RenewResponse;
import org.apache.cxf.ws.eventing.Subscribe;
import org.apache.cxf.ws.eventing.SubscribeResponse;
import org.apache.cxf.ws.eventing.Unsubscribe;
import org.apache.cxf.ws.eventing.eventsource.EventSourceEndpoint;
import org.apache.cxf.ws.eventing.manager.SubscriptionManagerEndpoint;
import org.apache.cxf.ws.eventing.shared.EventingConstants;
import org.apache.cxf.ws.eventing.shared.handlers.ReferenceParametersAddingHandler;
import org.apache.cxf.ws.eventing.shared.utils.DurationAndDateUtil;
import org.w3c.dom.Document;
import org.w3c.dom.Element;

/**
 * Consumer mode: CXF's JAX-WS clients subscribe (WS-Eventing 2011) to the source under
 * test with NotifyTo = a CXF event-sink endpoint whose EPR carries a reference parameter
 * (and, with --filter, an XPath 1.0 filter);
 * the sink takes N notifications; then GetStatus, Renew and Unsubscribe go to the
 * subscription manager the source named (its reference parameters added as header blocks
 * by CXF's ReferenceParametersAddingHandler), and a last GetStatus must fault. Last, a
 * Subscribe for a subscription that does not expire (PT0S, BestEffort) and its Unsubscribe.
 */
final class Consumer {
    static final String KEY_NS = "urn:lather:interop:cxf:sink";
    static final String KEY_NAME = "SinkKey";
    /** WS-Eventing 2011's XPath 1.0 filter dialect. */
    static final String XPATH10 = "http://www.w3.org/2011/03/ws-evt/Dialects/XPath10";

    private Consumer() {
    }

    static void run(String source, int events, int timeoutS, String filter) throws Exception {
        String sinkUrl = "http://127.0.0.1:" + Peer.freePort() + "/sink";
        RecordingSink sink = new RecordingSink();
        JaxWsServerFactoryBean serverFactory = new JaxWsServerFactoryBean();
        serverFactory.setServiceBean(sink);
        serverFactory.setAddress(sinkUrl);
        serverFactory.getHandlers().add(new HeaderRecorder());
        Server server = serverFactory.create();

        JaxWsProxyFactoryBean sourceFactory = new JaxWsProxyFactoryBean();
        sourceFactory.setServiceClass(EventSourceEndpoint.class);
        sourceFactory.setAddress(source);
        EventSourceEndpoint eventSource = (EventSourceEndpoint) sourceFactory.create();

        String key = "k-" + UUID.randomUUID();
        Subscribe subscribe = new Subscribe();
        EndpointReferenceType notifyTo = new EndpointReferenceType();
        AttributedURIType address = new AttributedURIType();
        address.setValue(sinkUrl);
        notifyTo.setAddress(address);
        notifyTo.setReferenceParameters(new ReferenceParametersType());
        notifyTo.getReferenceParameters().getAny().add(keyElement(key));
        subscribe.setDelivery(new DeliveryType());
        subscribe.getDelivery().getContent().add(new ObjectFactory().createNotifyTo(notifyTo));
        FormatType format = new FormatType();
        format.setName(EventingConstants.DELIVERY_FORMAT_UNWRAPPED);
        subscribe.setFormat(format);
        ExpirationType expires = new ExpirationType();
        expires.setValue("PT10M");
        subscribe.setExpires(expires);
        if (!filter.isEmpty()) {
            FilterType filterType = new FilterType();
            filterType.setDialect(XPATH10);
            filterType.getContent().add(filter);
            subscribe.setFilter(filterType);
        }
        SubscribeResponse response = eventSource.subscribeOp(subscribe);

        EndpointReferenceType manager = response.getSubscriptionManager();
        List<Map<String, Object>> managerParams = new ArrayList<>();
        for (Object o : manager.getReferenceParameters().getAny()) {
            Element e = (Element) o;
            Map<String, Object> p = new LinkedHashMap<>();
            p.put("namespace", e.getNamespaceURI());
            p.put("name", e.getLocalName());
            p.put("text", e.getTextContent());
            managerParams.add(p);
        }
        Map<String, Object> ready = new LinkedHashMap<>();
        ready.put("ready", true);
        ready.put("manager", manager.getAddress().getValue());
        ready.put("manager_parameters", managerParams);
        ready.put("granted_expires", response.getGrantedExpires().getValue());
        ready.put("notify_to", sinkUrl);
        ready.put("key", key);
        Json.emit(ready);

        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(timeoutS);
        List<Map<String, Object>> got = new ArrayList<>();
        while (got.size() < events) {
            long left = deadline - System.nanoTime();
            Map<String, Object> event = left > 0 ? sink.received.poll(left, TimeUnit.NANOSECONDS) : null;
            if (event == null) {
                throw new IllegalStateException("only " + got.size() + " of " + events
                        + " notifications arrived in " + timeoutS + " s");
            }
            got.add(event);
            Json.emit(Map.of("event", event));
        }

        SubscriptionManagerEndpoint managerClient = managerFor(manager);

        GetStatusResponse status = managerClient.getStatusOp(new GetStatus());
        Renew renew = new Renew();
        ExpirationType renewExpires = new ExpirationType();
        renewExpires.setValue("PT5M");
        renew.setExpires(renewExpires);
        RenewResponse renewed = managerClient.renewOp(renew);
        GetStatusResponse statusAfterRenew = managerClient.getStatusOp(new GetStatus());
        managerClient.unsubscribeOp(new Unsubscribe());
        String faultAfter;
        try {
            managerClient.getStatusOp(new GetStatus());
            faultAfter = null;
        } catch (SOAPFaultException fault) {
            faultAfter = fault.getFault().getFaultCodeAsQName() + " "
                    + subcodes(fault) + " " + fault.getFault().getFaultString();
        }
        // A subscription that does not expire, asked as CXF asks for one: PT0S (written by
        // CXF's own duration formatting) with BestEffort; then ended again.
        Subscribe forever = new Subscribe();
        forever.setDelivery(subscribe.getDelivery());
        ExpirationType noExpiry = new ExpirationType();
        noExpiry.setValue(DurationAndDateUtil.convertToXMLString(
                DurationAndDateUtil.parseDurationOrTimestamp("PT0S")));
        noExpiry.setBestEffort(true);
        forever.setExpires(noExpiry);
        String nonExpiring;
        try {
            SubscribeResponse foreverResponse = eventSource.subscribeOp(forever);
            nonExpiring = foreverResponse.getGrantedExpires().getValue();
            managerFor(foreverResponse.getSubscriptionManager()).unsubscribeOp(new Unsubscribe());
        } catch (SOAPFaultException fault) {
            nonExpiring = "fault: " + fault.getFault().getFaultCodeAsQName() + " "
                    + fault.getFault().getFaultString();
        }
        // Nothing may arrive once unsubscribed; give a late notification a moment to show.
        Map<String, Object> late = sink.received.poll(300, TimeUnit.MILLISECONDS);
        server.destroy();

        Map<String, Object> result = new LinkedHashMap<>();
        result.put("result", true);
        result.put("events", got.size());
        result.put("get_status", status.getGrantedExpires() == null ? null : status.getGrantedExpires().getValue());
        result.put("renew", renewed.getGrantedExpires() == null ? null : renewed.getGrantedExpires().getValue());
        result.put("get_status_after_renew", statusAfterRenew.getGrantedExpires() == null
                ? null : statusAfterRenew.getGrantedExpires().getValue());
        result.put("unsubscribed", true);
        result.put("fault_after_unsubscribe", faultAfter);
        result.put("late_event", late);
        result.put("non_expiring_granted", nonExpiring);
        Json.emit(result);
    }

    /** A JAX-WS client of the subscription manager {@code manager}, its reference parameters added. */
    private static SubscriptionManagerEndpoint managerFor(EndpointReferenceType manager) {
        JaxWsProxyFactoryBean factory = new JaxWsProxyFactoryBean();
        factory.setServiceClass(SubscriptionManagerEndpoint.class);
        factory.setAddress(manager.getAddress().getValue());
        factory.getHandlers().add(new ReferenceParametersAddingHandler(manager.getReferenceParameters()));
        return (SubscriptionManagerEndpoint) factory.create();
    }

    private static String subcodes(SOAPFaultException fault) {
        StringBuilder out = new StringBuilder();
        // SOAP 1.1 faults have no subcodes (SAAJ refuses to list them).
        if (SOAPConstants.URI_NS_SOAP_1_2_ENVELOPE.equals(fault.getFault().getNamespaceURI())) {
            var it = fault.getFault().getFaultSubcodes();
            while (it.hasNext()) {
                out.append(it.next());
            }
        }
        return out.toString();
    }

    private static Element keyElement(String key) throws Exception {
        DocumentBuilderFactory dbf = DocumentBuilderFactory.newInstance();
        dbf.setNamespaceAware(true);
        Document doc = dbf.newDocumentBuilder().newDocument();
        Element e = doc.createElementNS(KEY_NS, "app:" + KEY_NAME);
        e.setTextContent(key);
        doc.appendChild(e);
        return e;
    }
}
