package org.lather.interop.cxf;

import jakarta.xml.bind.annotation.XmlAccessType;
import jakarta.xml.bind.annotation.XmlAccessorType;
import jakarta.xml.bind.annotation.XmlElement;
import jakarta.xml.bind.annotation.XmlRootElement;
import jakarta.xml.bind.annotation.XmlType;

/**
 * The event of the interop test, bound by JAXB:
 * {@code <ev:Temperature xmlns:ev="urn:lather:interop:cxf"><ev:sensor>s</ev:sensor><ev:celsius>21</ev:celsius></ev:Temperature>}.
 */
@XmlRootElement(name = "Temperature", namespace = EventSink.NS)
@XmlType(name = "Temperature", namespace = EventSink.NS, propOrder = {"sensor", "celsius"})
@XmlAccessorType(XmlAccessType.FIELD)
public class TemperatureEvent {
    @XmlElement(namespace = EventSink.NS, required = true)
    private String sensor;
    @XmlElement(namespace = EventSink.NS, required = true)
    private int celsius;

    public TemperatureEvent() {
    }

    public TemperatureEvent(String sensor, int celsius) {
        this.sensor = sensor;
        this.celsius = celsius;
    }

    public String getSensor() {
        return sensor;
    }

    public int getCelsius() {
        return celsius;
    }
}
