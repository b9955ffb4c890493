package org.lather.bench.cxf;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;

import org.apache.cxf.interceptor.Fault;
import org.apache.cxf.message.Message;

/**
 * The raw bytes of a request body, read from the transport once per request and shared by
 * every interceptor that asks for them.
 *
 * <p>The first call reads the whole body (at most {@link #MAX_BYTES}) from the message's
 * {@link InputStream}, keeps the array as a message property and puts a
 * {@link ByteArrayInputStream} over the same array back in its place, so that CXF's own
 * parser later reads exactly the bytes that were hashed. Later calls on the same message
 * return the same array without copying.
 */
final class RequestBytes {
    /** The message property holding the cached body. */
    static final String PROPERTY = RequestBytes.class.getName();

    /** The largest body read into memory (lather's default {@code max_message_bytes}). */
    static final int MAX_BYTES = 4 * 1024 * 1024;

    private RequestBytes() {}

    /**
     * The whole request body of {@code message}, or {@code null} when it has none (a GET such
     * as {@code ?wsdl}).
     *
     * @throws Fault when the body cannot be read or is larger than {@link #MAX_BYTES}
     */
    static byte[] of(Message message) {
        Object cached = message.get(PROPERTY);
        if (cached instanceof byte[] bytes) {
            return bytes;
        }
        if ("GET".equals(message.get(Message.HTTP_REQUEST_METHOD))) {
            return null;
        }
        InputStream in = message.getContent(InputStream.class);
        if (in == null) {
            return null;
        }
        byte[] bytes;
        try {
            bytes = in.readNBytes(MAX_BYTES + 1);
        } catch (IOException e) {
            throw new Fault(e);
        }
        if (bytes.length > MAX_BYTES) {
            throw new Fault(new IOException(
                    "request body larger than " + MAX_BYTES + " bytes"));
        }
        message.put(PROPERTY, bytes);
        message.setContent(InputStream.class, new ByteArrayInputStream(bytes));
        return bytes;
    }
}
