package harness.lettuce;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A redis-server of our own on 127.0.0.1 and a free port, without persistence
 * ({@code --save '' --appendonly no}). It never outlives the launcher: {@link #close} stops it,
 * a shutdown hook stops it on SIGTERM/SIGINT, and {@code setpriv --pdeathsig KILL} has the kernel
 * kill it when the JVM dies of SIGKILL (the death signal follows the thread that started it: the
 * main thread, which lives until the JVM exits).
 */
final class RedisServer implements AutoCloseable {
    private static final long READY_TIMEOUT_MS = 15_000;
    private static final int ATTEMPTS = 5;

    final Process process;
    final int port;
    private final Thread hook;

    private RedisServer(Process process, int port) {
        this.process = process;
        this.port = port;
        this.hook = new Thread(this::stop, "redis-server-stop");
        Runtime.getRuntime().addShutdownHook(hook);
    }

    /** Starts redis-server on a free port (another one if the port was taken meanwhile). */
    static RedisServer start() throws IOException, InterruptedException {
        String last = "";
        for (int attempt = 0; attempt < ATTEMPTS; attempt++) {
            int port = freePort();
            Process p = new ProcessBuilder(List.of("setpriv", "--pdeathsig", "KILL", "--",
                    "redis-server", "--bind", "127.0.0.1", "--port", Integer.toString(port),
                    "--save", "", "--appendonly", "no", "--daemonize", "no", "--loglevel", "warning"))
                    .redirectOutput(ProcessBuilder.Redirect.DISCARD)
                    .redirectError(ProcessBuilder.Redirect.INHERIT)
                    .start();
            RedisServer server = new RedisServer(p, port);
            long deadline = System.currentTimeMillis() + READY_TIMEOUT_MS;
            while (p.isAlive() && System.currentTimeMillis() < deadline) {
                if (ping(port)) {
                    return server;
                }
                Thread.sleep(20);
            }
            last = p.isAlive() ? "no PONG within " + READY_TIMEOUT_MS + " ms" : "exited with code " + p.waitFor();
            server.close();
        }
        throw new IOException("redis-server did not start on 127.0.0.1 (" + last + ")");
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        }
    }

    private static boolean ping(int port) {
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 500);
            s.setSoTimeout(1000);
            OutputStream out = s.getOutputStream();
            out.write("PING\r\n".getBytes(StandardCharsets.US_ASCII));
            out.flush();
            InputStream in = s.getInputStream();
            byte[] buf = new byte[7];
            int n = in.readNBytes(buf, 0, 7);
            return new String(buf, 0, n, StandardCharsets.US_ASCII).equals("+PONG\r\n");
        } catch (IOException e) {
            return false;
        }
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
