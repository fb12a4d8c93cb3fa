package harness.lettuce;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Latencies in log-linear buckets (64 sub-buckets per power of two: under 1.6% error), one per
 * thread, merged at the end.
 */
final class LatencyHistogram {
    private static final int SUB_BITS = 6;
    private static final int SUB = 1 << SUB_BITS;
    private final long[] counts = new long[64 * SUB];
    private long total;
    private long sum;
    private long max;

    void record(long ns) {
        long v = Math.max(ns, 0);
        counts[index(v)]++;
        total++;
        sum += v;
        max = Math.max(max, v);
    }

    void merge(LatencyHistogram other) {
        for (int i = 0; i < counts.length; i++) {
            counts[i] += other.counts[i];
        }
        total += other.total;
        sum += other.sum;
        max = Math.max(max, other.max);
    }

    long count() {
        return total;
    }

    static int index(long v) {
        if (v < SUB) {
            return (int) v;
        }
        int exp = 63 - Long.numberOfLeadingZeros(v); // >= SUB_BITS
        int shift = exp - SUB_BITS;
        int sub = (int) (v >>> shift) - SUB; // 0..SUB-1
        return (shift + 1) * SUB + sub;
    }

    /** The largest value of bucket i. */
    static long upper(int i) {
        if (i < SUB) {
            return i;
        }
        int shift = i / SUB - 1;
        long sub = i % SUB + SUB;
        return ((sub + 1) << shift) - 1;
    }

    long quantile(double q) {
        if (total == 0) {
            return 0;
        }
        long rank = Math.max(1, (long) Math.ceil(q * total));
        long seen = 0;
        for (int i = 0; i < counts.length; i++) {
            seen += counts[i];
            if (seen >= rank) {
                return Math.min(upper(i), max);
            }
        }
        return max;
    }

    /** The contract's latency_ns: p50, p90, p99, p999, max and mean, in ns. */
    Map<String, Object> summary() {
        Map<String, Object> s = new LinkedHashMap<>();
        s.put("p50", quantile(0.50));
        s.put("p90", quantile(0.90));
        s.put("p99", quantile(0.99));
        s.put("p999", quantile(0.999));
        s.put("max", max);
        s.put("mean", total == 0 ? 0.0 : (double) sum / total);
        return s;
    }
}
