package harness.lettuce;

import com.sun.management.GarbageCollectionNotificationInfo;
import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import javax.management.NotificationEmitter;
import javax.management.openmbean.CompositeData;

/**
 * The JVM's own GC figures over the measured window, from its GarbageCollectorMXBeans: the
 * collections (count) and their time (ms, the beans' resolution), and the longest one seen
 * by the beans' notifications. What the {@code jvmgc} probe is checked against.
 */
final class JvmGc {
    private final AtomicLong maxMs = new AtomicLong();
    private volatile boolean counting;
    private long count0;
    private long time0;
    private long count1;
    private long time1;

    JvmGc() {
        for (GarbageCollectorMXBean bean : ManagementFactory.getGarbageCollectorMXBeans()) {
            if (bean instanceof NotificationEmitter emitter) {
                emitter.addNotificationListener((notification, handback) -> {
                    if (counting && GarbageCollectionNotificationInfo.GARBAGE_COLLECTION_NOTIFICATION
                            .equals(notification.getType())) {
                        long ms = GarbageCollectionNotificationInfo
                                .from((CompositeData) notification.getUserData()).getGcInfo().getDuration();
                        maxMs.accumulateAndGet(ms, Math::max);
                    }
                }, null, null);
            }
        }
    }

    private static long[] totals() {
        long count = 0;
        long time = 0;
        for (GarbageCollectorMXBean bean : ManagementFactory.getGarbageCollectorMXBeans()) {
            count += Math.max(bean.getCollectionCount(), 0);
            time += Math.max(bean.getCollectionTime(), 0);
        }
        return new long[] {count, time};
    }

    void start() {
        long[] t = totals();
        count0 = t[0];
        time0 = t[1];
        counting = true;
    }

    void end() {
        long[] t = totals();
        count1 = t[0];
        time1 = t[1];
        counting = false;
    }

    /** jvm_gc: collections, their time and the longest, over the window. */
    Map<String, Object> result() {
        Map<String, Object> r = new LinkedHashMap<>();
        r.put("collections", count1 - count0);
        r.put("time_ms", time1 - time0);
        r.put("max_ms", maxMs.get());
        Map<String, Object> collectors = new LinkedHashMap<>();
        for (GarbageCollectorMXBean bean : ManagementFactory.getGarbageCollectorMXBeans()) {
            collectors.put(bean.getName(), bean.getCollectionCount());
        }
        r.put("collectors_total", collectors);
        return r;
    }
}
