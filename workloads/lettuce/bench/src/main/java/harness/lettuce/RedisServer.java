package harness.lettuce;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A redis-server of our own on 127.0.0.1 and a free port, without persistence
 * ({@code --save '' --appendonly no}). It never outlives the launcher: {@link #close} stops it,
 * a shutdown hook stops it on SIGTERM/SIGINT, and {@code setpriv --pdeathsig KILL} has the kernel
 * kill it when the JVM dies of SIGKILL (the death signal follows the thread that started it: the
 * main thread, which lives until the JVM exits).
 *
 * <p>The port is held from the moment it is picked until redis-server listens on it: a socket
 * bound to it with SO_REUSEADDR and never listening, which only another SO_REUSEADDR socket
 * that does not listen yet may share (redis-server's does), so no ordinary server can take the
 * port in between. The server that answers must then be the child itself: {@code INFO server}'s
 * {@code process_id} equals the child's pid ({@code setpriv} execs redis-server, same pid), else
 * the start fails, naming the stranger.
 */
final class RedisServer implements AutoCloseable {
    private static final long READY_TIMEOUT_MS = 15_000;
    private static final int ATTEMPTS = 5;
    private static final int MAX_INFO_BYTES = 1 << 20;
    private static final Pattern PROCESS_ID = Pattern.compile("(?m)^process_id:(\\d+)\r?$");

    final Process process;
    final int port;
    private final Thread hook;

    private RedisServer(Process process, int port) {
        this.process = process;
        this.port = port;
        this.hook = new Thread(this::stop, "redis-server-stop");
        Runtime.getRuntime().addShutdownHook(hook);
    }

    /** Starts redis-server on a free port it cannot lose (another port if it exits first). */
    static RedisServer start() throws IOException, InterruptedException {
        String last = "";
        for (int attempt = 0; attempt < ATTEMPTS; attempt++) {
            RedisServer server;
            try (Socket reserved = reservePort()) {
                int port = reserved.getLocalPort();
                Process p = new ProcessBuilder(List.of("setpriv", "--pdeathsig", "KILL", "--",
                        "redis-server", "--bind", "127.0.0.1", "--port", Integer.toString(port),
                        "--save", "", "--appendonly", "no", "--daemonize", "no", "--loglevel", "warning"))
                        .redirectOutput(ProcessBuilder.Redirect.DISCARD)
                        .redirectError(ProcessBuilder.Redirect.INHERIT)
                        .start();
                server = new RedisServer(p, port);
                try {
                    if (server.awaitOwnAnswer()) {
                        return server;
                    }
                } catch (IOException e) {
                    server.close();
                    throw e;
                }
            }
            last = server.process.isAlive() ? "no answer within " + READY_TIMEOUT_MS + " ms"
                    : "exited with code " + server.process.waitFor();
            server.close();
        }
        throw new IOException("redis-server did not start on 127.0.0.1 (" + last + ")");
    }

    /** A socket bound to a free loopback port, not listening: the port stays ours meanwhile. */
    private static Socket reservePort() throws IOException {
        Socket s = new Socket();
        try {
            s.setReuseAddress(true);
            s.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
            return s;
        } catch (IOException e) {
            s.close();
            throw e;
        }
    }

    /**
     * True once the child answers on its port; false if it exits or stays silent until the
     * timeout; IOException if another process answers there.
     */
    private boolean awaitOwnAnswer() throws IOException, InterruptedException {
        long deadline = System.currentTimeMillis() + READY_TIMEOUT_MS;
        while (process.isAlive() && System.currentTimeMillis() < deadline) {
            String info = infoServer(port);
            if (info != null) {
                Matcher m = PROCESS_ID.matcher(info);
                long answering = m.find() ? Long.parseLong(m.group(1)) : -1;
                if (answering == process.pid()) {
                    return true;
                }
                throw new IOException("127.0.0.1:" + port + " is answered by "
                        + (answering < 0 ? "a server that does not say its process_id" : "process " + answering)
                        + ", not by the redis-server started here (pid " + process.pid()
                        + "): another server took the port");
            }
            Thread.sleep(20);
        }
        return false;
    }

    /** {@code INFO server}'s text from 127.0.0.1:port, "" for an answer that is not a bulk
     * string, null when nothing answers. */
    private static String infoServer(int port) {
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 500);
            s.setSoTimeout(1000);
            OutputStream out = s.getOutputStream();
            out.write("INFO server\r\n".getBytes(StandardCharsets.US_ASCII));
            out.flush();
            InputStream in = s.getInputStream();
            String header = line(in);
            if (!header.startsWith("$")) {
                return "";
            }
            int length;
            try {
                length = Integer.parseInt(header.substring(1));
            } catch (NumberFormatException e) {
                return "";
            }
            if (length < 0 || length > MAX_INFO_BYTES) {
                return "";
            }
            return new String(in.readNBytes(length), StandardCharsets.US_ASCII);
        } catch (IOException e) {
            return null;
        }
    }

    /** One CRLF-terminated line (at most 64 bytes: a RESP header), without its end. */
    private static String line(InputStream in) throws IOException {
        StringBuilder b = new StringBuilder();
        for (int c = in.read(); c >= 0 && c != '\n' && b.length() < 64; c = in.read()) {
            if (c != '\r') {
                b.append((char) c);
            }
        }
        return b.toString();
    }

    /** SIGTERM, then SIGKILL after 5 s; waits until it is gone. */
    private void stop() {
        if (!process.isAlive()) {
            return;
        }
        process.destroy();
        try {
            if (!process.waitFor(5, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                process.waitFor();
            }
        } catch (InterruptedException e) {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
        }
    }

    @Override
    public void close() {
        stop();
        try {
            Runtime.getRuntime().removeShutdownHook(hook);
        } catch (IllegalStateException e) {
            // the JVM is shutting down: the hook runs (or ran) anyway
        }
    }
}
