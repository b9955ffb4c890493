package org.lather.interop.cxf;

import jakarta.jws.WebService;
import jakarta.xml.ws.handler.MessageContext;
import jakarta.xml.ws.handler.soap.SOAPHandler;
import jakarta.xml.ws.handler.soap.SOAPMessageContext;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import javax.xml.namespace.QName;
import org.apache.cxf.endpoint.Server;
import org.apache.cxf.jaxws.JaxWsServerFactoryBean;
import org.apache.cxf.ws.eventing.backend.database.SubscriptionTicket;
import org.apache.cxf.ws.eventing.backend.manager.SubscriptionManagerImpl;
import org.apache.cxf.ws.eventing.backend.manager.SubscriptionManagerInterfaceForEventSources;
import org.apache.cxf.ws.eventing.backend.manager.SubscriptionManagerInterfaceForManagers;
import org.apache.cxf.ws.eventing.backend.manager.SubscriptionManagerInterfaceForNotificators;
import org.apache.cxf.ws.eventing.backend.notification.EventSinkInterfaceNotificatorService;
import org.apache.cxf.ws.eventing.backend.notification.SubscriptionEndStatus;
import org.apache.cxf.ws.eventing.eventsource.AbstractEventSource;
import org.apache.cxf.ws.eventing.manager.AbstractSubscriptionManager;
import org.w3c.dom.Element;
import org.w3c.dom.Node;

/**
 * Source mode: CXF's event source and subscription manager (WS-Eventing 2011, in-memory
 * subscription database) on 127.0.0.1, and its notificator pushing {@link TemperatureEvent}s
 * through the {@link EventSink} port type to every subscriber. Commands on stdin, one per
 * line, each answered by one JSON line: {@code emit N}, {@code state}, {@code end}
 * (SubscriptionEnd SourceShuttingDown to every subscription), {@code quit}.
 */
public final class Source {
    static SubscriptionManagerImpl backend;
    static final List<String> REQUESTS = Collections.synchronizedList(new ArrayList<>());

    private Source() {
    }

    /** The event source endpoint, backed by the shared in-memory subscription manager. */
    @WebService(endpointInterface = "org.apache.cxf.ws.eventing.eventsource.EventSourceEndpoint")
    public static class CxfEventSource extends AbstractEventSource {
        @Override
        protected SubscriptionManagerInterfaceForEventSources getSubscriptionManagerBackend() {
            return backend;
        }
    }

    /** The subscription manager endpoint (Renew, GetStatus, Unsubscribe). */
    @WebService(endpointInterface = "org.apache.cxf.ws.eventing.manager.SubscriptionManagerEndpoint")
    public static class CxfSubscriptionManager extends AbstractSubscriptionManager {
        @Override
        protected SubscriptionManagerInterfaceForManagers getSubscriptionManagerBackend() {
            return backend;
        }
    }

    /** Keeps the last segment of each inbound request's wsa:Action (Subscribe, Renew, ...). */
    static final class ActionRecorder implements SOAPHandler<SOAPMessageContext> {
        @Override
        public Set<QName> getHeaders() {
            return Set.of();
        }

        @Override
        public boolean handleMessage(SOAPMessageContext context) {
            if ((Boolean) context.get(MessageContext.MESSAGE_OUTBOUND_PROPERTY)) {
                return true;
            }
            try {
                var header = context.getMessage().getSOAPHeader();
                for (Node n = header == null ? null : header.getFirstChild(); n != null; n = n.getNextSibling()) {
                    if (n instanceof Element e && HeaderRecorder.WSA.equals(e.getNamespaceURI())
                            && "Action".equals(e.getLocalName())) {
                        String action = e.getTextContent().trim();
                        REQUESTS.add(action.substring(action.lastIndexOf('/') + 1));
                    }
                }
            } catch (jakarta.xml.soap.SOAPException ex) {
                throw new IllegalStateException(ex);
            }
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

    static void run(int port) throws Exception {
        if (port == 0) {
            port = Peer.freePort();
        }
        String base = "http://127.0.0.1:" + port;
        backend = new SubscriptionManagerImpl(base + "/manager");
        Server source = serve(new CxfEventSource(), base + "/source");
        Server manager = serve(new CxfSubscriptionManager(), base + "/manager");
        EventSinkInterfaceNotificatorService notificator = new EventSinkInterfaceNotificatorService() {
            @Override
            protected SubscriptionManagerInterfaceForNotificators obtainManager() {
                return backend;
            }

            @Override
            protected Class<?> getEventSinkInterface() {
                return EventSink.class;
            }
        };
        notificator.start();
        Map<String, Object> started = new LinkedHashMap<>();
        started.put("source", base + "/source");
        started.put("manager", base + "/manager");
        Json.emit(started);

        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        for (String line = in.readLine(); line != null; line = in.readLine()) {
            String[] words = line.trim().split("\\s+");
            switch (words[0]) {
                case "emit" -> {
                    int n = Integer.parseInt(words[1]);
                    for (int i = 1; i <= n; i++) {
                        notificator.dispatchEvent(new TemperatureEvent("cxf-" + i, i));
                    }
                    Json.emit(Map.of("emitted", n, "subscriptions", backend.getTickets().size()));
                }
                case "state" -> Json.emit(state());
                case "end" -> {
                    int n = 0;
                    for (SubscriptionTicket ticket : List.copyOf(backend.getTickets())) {
                        backend.subscriptionEnd(ticket.getUuid(), "the CXF peer is shutting down",
                                SubscriptionEndStatus.SOURCE_SHUTTING_DOWN);
                        n++;
                    }
                    Json.emit(Map.of("ended", n));
                }
                case "quit" -> {
                    notificator.stop();
                    source.destroy();
                    manager.destroy();
                    Json.emit(Map.of("bye", true));
                    return;
                }
                case "" -> {
                }
                default -> Json.emit(Map.of("error", "unknown command " + words[0]));
            }
        }
        notificator.stop();
    }

    private static Map<String, Object> state() {
        Map<String, Object> out = new LinkedHashMap<>();
        List<Map<String, Object>> tickets = new ArrayList<>();
        for (SubscriptionTicket t : backend.getTickets()) {
            Map<String, Object> ticket = new LinkedHashMap<>();
            ticket.put("id", t.getUuid().toString());
            ticket.put("notify_to", t.getTargetURL());
            ticket.put("end_to", t.getEndToURL());
            ticket.put("expires", t.getExpires().toXMLFormat());
            ticket.put("wrapped", t.isWrappedDelivery());
            List<String> params = new ArrayList<>();
            if (t.getNotificationReferenceParams() != null) {
                for (Object p : t.getNotificationReferenceParams().getAny()) {
                    if (p instanceof Element e) {
                        params.add("{" + e.getNamespaceURI() + "}" + e.getLocalName() + "=" + e.getTextContent());
                    }
                }
            }
            ticket.put("notify_to_parameters", params);
            tickets.add(ticket);
        }
        out.put("subscriptions", tickets);
        synchronized (REQUESTS) {
            out.put("requests", new ArrayList<>(REQUESTS));
        }
        return out;
    }

    private static Server serve(Object bean, String address) {
        JaxWsServerFactoryBean factory = new JaxWsServerFactoryBean();
        factory.setServiceBean(bean);
        factory.setAddress(address);
        factory.getHandlers().add(new ActionRecorder());
        return factory.create();
    }
}
