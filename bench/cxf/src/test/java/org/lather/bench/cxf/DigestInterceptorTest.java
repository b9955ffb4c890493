package org.lather.bench.cxf;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;

import org.apache.cxf.interceptor.Fault;
import org.apache.cxf.message.Message;
import org.apache.cxf.message.MessageImpl;
import org.junit.jupiter.api.Test;

class DigestInterceptorTest {
    /**
     * The request `lather-bench http` sends by default (SOAP 1.1, 100 payload bytes), as built
     * by crates/lather-bench/src/request.rs.
     */
    private static final String BENCH_REQUEST = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>"
            + "<soap:Envelope xmlns:soap=\"http://schemas.xmlsoap.org/soap/envelope/\">"
            + "<soap:Body><ns:echo xmlns:ns=\"urn:lather:echo\"><text>"
            + "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyz"
            + "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuv"
            + "</text></ns:echo></soap:Body></soap:Envelope>";

    /** `printf %s "$BENCH_REQUEST" | sha256sum` (coreutils). */
    private static final String BENCH_REQUEST_SHA256 =
            "67e1c74eae17f457257b59a1484b1e3770ab35a85353ffe22060a2161d6b5d5a";

    /** `printf abc | sha256sum` (coreutils). */
    private static final String ABC_SHA256 =
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";

    private static Message post(byte[] body) {
        Message message = new MessageImpl();
        message.put(Message.HTTP_REQUEST_METHOD, "POST");
        message.setContent(InputStream.class, new ByteArrayInputStream(body));
        return message;
    }

    @Test
    void everyRoundHashesTheWholeInput() {
        byte[] abc = "abc".getBytes(StandardCharsets.US_ASCII);
        assertEquals(ABC_SHA256, HexFormat.of().formatHex(new DigestInterceptor("d", 3).run(abc)));
        assertNull(new DigestInterceptor("d", 0).run(abc));
    }

    @Test
    void fiveInterceptorsHashTheSameRawBytesAndLeaveTheBodyReadable() throws IOException {
        byte[] body = BENCH_REQUEST.getBytes(StandardCharsets.UTF_8);
        Message message = post(body);
        DigestInterceptor[] chain = new DigestInterceptor[5];
        for (int i = 0; i < chain.length; i++) {
            chain[i] = new DigestInterceptor("d" + (i + 1), 10);
            chain[i].handleMessage(message);
        }
        byte[] cached = RequestBytes.of(message);
        assertArrayEquals(body, cached);
        for (DigestInterceptor digest : chain) {
            assertEquals(1, digest.hashed());
            assertEquals(BENCH_REQUEST_SHA256, HexFormat.of().formatHex(digest.run(cached)));
        }
        // The body was read from the transport once; the parser still gets all of it.
        assertSame(cached, RequestBytes.of(message));
        assertArrayEquals(body, message.getContent(InputStream.class).readAllBytes());
    }

    @Test
    void getRequestsAreNotHashed() {
        Message message = new MessageImpl();
        message.put(Message.HTTP_REQUEST_METHOD, "GET");
        DigestInterceptor digest = new DigestInterceptor("d1", 10);
        digest.handleMessage(message);
        assertEquals(0, digest.hashed());
    }

    @Test
    void anOversizedBodyIsAFaultNotAnUnboundedRead() {
        Message message = post(new byte[RequestBytes.MAX_BYTES + 1]);
        assertThrows(Fault.class, () -> new DigestInterceptor("d1", 1).handleMessage(message));
    }
}
