package org.lather.bench.cxf;

import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.concurrent.atomic.LongAdder;

import org.apache.cxf.message.Message;
import org.apache.cxf.phase.AbstractPhaseInterceptor;
import org.apache.cxf.phase.Phase;

/**
 * The counterpart of lather's {@code digest} handler: hashes the whole raw request body with
 * SHA-256 {@code rounds} times in a row (each round hashes the whole input again), discards
 * the result and lets the message continue unchanged.
 *
 * <p>It runs in {@link Phase#RECEIVE}, before CXF parses anything, on the bytes given by
 * {@link RequestBytes#of}: the first digest interceptor of a request reads the body from the
 * transport, the others reuse that array. Requests without a body (GET) are not hashed.
 */
final class DigestInterceptor extends AbstractPhaseInterceptor<Message> {
    /** One SHA-256 instance per thread; {@link MessageDigest#digest(byte[])} resets it. */
    private static final ThreadLocal<MessageDigest> SHA256 = ThreadLocal.withInitial(() -> {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("the JDK has no SHA-256", e);
        }
    });

    private final int rounds;
    private final LongAdder hashed = new LongAdder();
    /** Receives one byte of each result so that the JIT cannot drop the work (a black box). */
    private byte sink;

    /**
     * @param id     the interceptor's id in the chain (unique per endpoint, e.g. "d1")
     * @param rounds how many times each request is hashed
     */
    DigestInterceptor(String id, int rounds) {
        super(id, Phase.RECEIVE);
        if (rounds < 0) {
            throw new IllegalArgumentException("rounds must be >= 0, got " + rounds);
        }
        this.rounds = rounds;
    }

    @Override
    public void handleMessage(Message message) {
        byte[] body = RequestBytes.of(message);
        if (body == null) {
            return;
        }
        byte[] last = run(body);
        if (last != null) {
            sink ^= last[0];
        }
        hashed.increment();
    }

    /** The last of the {@code rounds} SHA-256 digests of {@code bytes}; null for 0 rounds. */
    byte[] run(byte[] bytes) {
        MessageDigest sha256 = SHA256.get();
        byte[] out = null;
        for (int i = 0; i < rounds; i++) {
            out = sha256.digest(bytes);
        }
        return out;
    }

    /** How many requests this interceptor has hashed. */
    long hashed() {
        return hashed.sum();
    }
}
