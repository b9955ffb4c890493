package org.lather.bench.cxf;

import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.stream.Collectors;

import jakarta.xml.ws.Endpoint;

import org.apache.cxf.jaxws.EndpointImpl;

/**
 * Starts the echo service on {@code http://HOST:PORT/echo} with N digest interceptors in its
 * IN chain, and serves until it is stopped (SIGTERM/SIGINT).
 *
 * <pre>
 * java -jar cxf-digest-echo.jar PORT [ROUNDS [INTERCEPTORS]]
 * </pre>
 *
 * ROUNDS defaults to the system property {@code digest.rounds} (else 10), INTERCEPTORS to
 * {@code digest.interceptors} (else 5); the host is {@code bind.host} (else 127.0.0.1).
 */
public final class EchoServer {
    private EchoServer() {}

    public static void main(String[] args) throws InterruptedException {
        if (args.length < 1 || args.length > 3) {
            System.err.println(
                    "usage: java -jar cxf-digest-echo.jar PORT [ROUNDS [INTERCEPTORS]]");
            System.exit(2);
        }
        int port = number("PORT", args[0], 1, 65535);
        int rounds = number("ROUNDS",
                args.length > 1 ? args[1] : System.getProperty("digest.rounds", "10"),
                0, Integer.MAX_VALUE);
        int count = number("INTERCEPTORS",
                args.length > 2 ? args[2] : System.getProperty("digest.interceptors", "5"),
                0, 64);
        String host = System.getProperty("bind.host", "127.0.0.1");
        String address = "http://" + host + ":" + port + "/echo";

        List<DigestInterceptor> digests = new ArrayList<>();
        for (int i = 1; i <= count; i++) {
            digests.add(new DigestInterceptor("d" + i, rounds));
        }
        EndpointImpl endpoint = (EndpointImpl) Endpoint.create(new EchoProvider());
        endpoint.getInInterceptors().addAll(digests);
        endpoint.publish(address);

        Runtime rt = Runtime.getRuntime();
        String gcs = ManagementFactory.getGarbageCollectorMXBeans().stream()
                .map(GarbageCollectorMXBean::getName).collect(Collectors.joining(", "));
        System.out.printf("cxf-digest-echo: %s, %d digest interceptor(s) x %d SHA-256 round(s)%n",
                address, count, rounds);
        System.out.printf("cxf-digest-echo: Java %s (%s), %d CPUs, max heap %d MiB, GC: %s%n",
                System.getProperty("java.version"), System.getProperty("java.vm.name"),
                rt.availableProcessors(), rt.maxMemory() >> 20, gcs);
        System.out.flush();

        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            String counts = digests.stream().map(d -> d.getId() + "=" + d.hashed())
                    .collect(Collectors.joining(" "));
            System.out.println("cxf-digest-echo: stopping; requests hashed: " + counts);
            System.out.flush();
            endpoint.stop();
            stopped.countDown();
        }));
        stopped.await();
    }

    private static int number(String what, String text, int min, int max) {
        try {
            int n = Integer.parseInt(text.trim());
            if (n >= min && n <= max) {
                return n;
            }
        } catch (NumberFormatException e) {
            // reported below
        }
        System.err.printf("%s must be an integer in %d..%d, got '%s'%n", what, min, max, text);
        System.exit(2);
        return 0;
    }
}
