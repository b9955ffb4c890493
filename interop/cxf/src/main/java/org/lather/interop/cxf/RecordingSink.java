package org.lather.interop.cxf;

import jakarta.annotation.Resource;
import jakarta.jws.WebService;
import jakarta.xml.ws.WebServiceContext;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;

/** The consumer's event sink: every notification CXF unmarshalled, with its headers. */
@WebService(endpointInterface = "org.lather.interop.cxf.EventSink",
        targetNamespace = EventSink.NS, serviceName = "EventSinkService", portName = "EventSinkPort")
public class RecordingSink implements EventSink {
    final BlockingQueue<Map<String, Object>> received = new LinkedBlockingQueue<>();

    @Resource
    private WebServiceContext context;

    @Override
    @SuppressWarnings("unchecked")
    public void temperature(TemperatureEvent event) {
        Map<String, Object> line = new LinkedHashMap<>();
        line.put("sensor", event.getSensor());
        line.put("celsius", event.getCelsius());
        Object headers = context.getMessageContext().get(HeaderRecorder.KEY);
        if (headers instanceof Map<?, ?> map) {
            line.putAll((Map<String, Object>) map);
        }
        received.add(line);
    }
}
