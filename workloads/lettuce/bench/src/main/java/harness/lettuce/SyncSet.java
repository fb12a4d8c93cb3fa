package harness.lettuce;

import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisCommandTimeoutException;
import io.lettuce.core.RedisURI;
import io.lettuce.core.TimeoutOptions;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import io.lettuce.core.resource.ClientResources;
import io.lettuce.core.resource.DefaultClientResources;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The lettuce issue's RedisClientBenchmark#syncSet as a closed loop: {@code threads} client
 * threads share one connection, each doing {@code connection.sync().set(KEY, KEY)} back to back.
 */
final class SyncSet implements AutoCloseable {
    static final String KEY = "key";
    private static final int WARMUP = 0;
    private static final int MEASURE = 1;
    private static final int STOP = 2;

    private final ClientResources resources;
    private final RedisClient client;
    private final StatefulRedisConnection<String, String> connection;
    private volatile int phase = WARMUP;
    private final List<Worker> workers = new ArrayList<>();

    static final class Worker extends Thread {
        final LatencyHistogram histogram = new LatencyHistogram();
        long issued;
        long ok;
        long timeouts;
        long errors;
        String firstError;
        private final SyncSet bench;

        Worker(SyncSet bench, int i) {
            super("syncset-" + i);
            this.bench = bench;
            setDaemon(true);
        }

        @Override
        public void run() {
            RedisCommands<String, String> sync = bench.connection.sync();
            while (true) {
                int ph = bench.phase;
                if (ph == STOP) {
                    return;
                }
                long begin = System.nanoTime();
                boolean measured = ph == MEASURE;
                try {
                    sync.set(KEY, KEY);
                    if (measured) {
                        histogram.record(System.nanoTime() - begin);
                        ok++;
                    }
                } catch (RedisCommandTimeoutException e) {
                    if (measured) {
                        timeouts++;
                    }
                } catch (RuntimeException e) {
                    if (measured) {
                        errors++;
                        if (firstError == null) {
                            firstError = e.toString();
                        }
                    }
                }
                if (measured) {
                    issued++;
                }
            }
        }
    }

    SyncSet(Strategy strategy, int port, long computationThreads, long timeoutMs) {
        resources = DefaultClientResources.builder().computationThreadPoolSize((int) computationThreads).build();
        client = RedisClient.create(resources, RedisURI.create("127.0.0.1", port));
        TimeoutOptions timeouts = strategy.timeouts
                ? TimeoutOptions.builder().timeoutCommands(true).fixedTimeout(Duration.ofMillis(timeoutMs)).build()
                : TimeoutOptions.builder().timeoutCommands(false).build();
        client.setOptions(ClientOptions.builder().timeoutOptions(timeouts).build());
        connection = client.connect();
        connection.sync().set(KEY, KEY);
    }

    void startThreads(long threads) {
        for (int i = 0; i < threads; i++) {
            Worker w = new Worker(this, i);
            workers.add(w);
            w.start();
        }
    }

    void measure() {
        phase = MEASURE;
    }

    void stop() {
        phase = STOP;
    }

    List<Worker> join() throws InterruptedException {
        for (Worker w : workers) {
            w.join();
        }
        return workers;
    }

    @Override
    public void close() {
        connection.close();
        client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
        resources.shutdown(0, 2, TimeUnit.SECONDS).awaitUninterruptibly(3000);
    }
}
