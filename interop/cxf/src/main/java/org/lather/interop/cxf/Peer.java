package org.lather.interop.cxf;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.util.Map;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * An independent WS-Eventing 2011 peer built from Apache CXF's ws-eventing module, for
 * lather's interop test. Every line it prints on stdout is one JSON object.
 *
 * <pre>
 *   consumer --source URL [--events N] [--timeout S] [--filter XPATH]
 *   source [--port P]
 * </pre>
 */
public final class Peer {
    private Peer() {
    }

    public static void main(String[] args) {
        // CXF logs each exchange at INFO; stderr stays readable with warnings only.
        Logger.getLogger("").setLevel(Level.WARNING);
        Logger.getLogger("org.apache.cxf").setLevel(Level.WARNING);
        Logger.getLogger("org.eclipse.jetty").setLevel(Level.WARNING);
        try {
            if (args.length == 0) {
                throw new IllegalArgumentException("usage: consumer --source URL [--events N] [--timeout S] [--filter XPATH] | source [--port P]");
            }
            switch (args[0]) {
                case "consumer" -> Consumer.run(option(args, "--source", null),
                        Integer.parseInt(option(args, "--events", "5")),
                        Integer.parseInt(option(args, "--timeout", "20")),
                        option(args, "--filter", ""));
                case "source" -> Source.run(Integer.parseInt(option(args, "--port", "0")));
                default -> throw new IllegalArgumentException("unknown mode " + args[0]);
            }
        } catch (Throwable e) {
            e.printStackTrace();
            Json.emit(Map.of("error", String.valueOf(e)));
            System.exit(1);
        }
        System.exit(0);
    }

    private static String option(String[] args, String name, String fallback) {
        for (int i = 1; i + 1 < args.length; i++) {
            if (args[i].equals(name)) {
                return args[i + 1];
            }
        }
        if (fallback == null) {
            throw new IllegalArgumentException(name + " is required");
        }
        return fallback;
    }

    /** A port free on 127.0.0.1 right now. */
    static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        }
    }
}
