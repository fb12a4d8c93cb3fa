package harness.lettuce;

import io.lettuce.core.RedisClient;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.management.ManagementFactory;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import javax.management.ObjectName;

/**
 * lettuce-bench: the workload contract (docs/workload-contract.md) around the syncSet closed
 * loop. {@code describe} prints the suite; {@code check} checks a run's input only; {@code run}
 * checks its input first (exit 2, one line),
 * then starts redis-server, connects, prints ready, waits for the gate, warms up and measures.
 */
public final class Main {
    private static final String USAGE = "usage: lettuce-bench describe | lettuce-bench check|run --strategy S "
            + "[--scenario X] [--param k=v]... --duration-s D --warmup-s W [--gate]";
    private static final String FLAGS = "valid flags: --strategy, --scenario, --param, --duration-s, --warmup-s, --gate";
    static final String SCENARIO = "syncset";

    private Main() {}

    /** A validated run. */
    record Plan(Strategy strategy, Map<String, Long> params, double durationS, double warmupS, boolean gate) {}

    public static void main(String[] args) {
        int code;
        try {
            code = command(args);
        } catch (BadInput e) {
            System.err.println("error: " + e.getMessage());
            code = 2;
        } catch (Exception e) {
            System.err.println("error: " + e);
            code = 1;
        }
        System.out.flush();
        System.exit(code);
    }

    private static int command(String[] args) throws Exception {
        if (args.length == 0) {
            throw new BadInput("missing command (valid: describe, check, run)");
        }
        switch (args[0]) {
            case "describe" -> {
                if (args.length > 1) {
                    throw new BadInput("describe takes no arguments, got '" + args[1] + "'");
                }
                System.out.println(Json.write(describe()));
                return 0;
            }
            case "check" -> {
                parse(List.of(args).subList(1, args.length));
                return 0;
            }
            case "run" -> {
                return run(parse(List.of(args).subList(1, args.length)));
            }
            case "-h", "--help", "help" -> {
                System.out.println(USAGE);
                return 0;
            }
            default -> throw new BadInput("unknown command '" + args[0] + "' (valid: describe, check, run)");
        }
    }

    static Map<String, Object> describe() {
        Map<String, Object> d = new LinkedHashMap<>();
        d.put("suite", "lettuce");
        d.put("contract_version", 2);
        d.put("baseline", Strategy.EXECUTOR_EXPIRY.id);
        List<Object> strategies = new ArrayList<>();
        for (Strategy s : Strategy.values()) {
            strategies.add(Map.of("name", s.id, "help", s.help));
        }
        d.put("strategies", strategies);
        d.put("default_scenario", SCENARIO);
        d.put("scenarios", List.of(Map.of("name", SCENARIO, "help",
                "the lettuce issue's JMH syncSet: threads client threads, one shared connection, "
                        + "a synchronous SET of one fixed key each, back to back, against a local redis-server",
                "params", Map.of())));
        d.put("params", Param.ALL.stream().map(Param::describe).toList());
        d.put("metrics", List.of(
                metric("ops_per_sec", "ops/s", "higher"),
                metric("latency_ns.p50", "ns", "lower"),
                metric("latency_ns.p99", "ns", "lower"),
                metric("errors", "requests", "lower"),
                metric("timeouts", "requests", "lower")));
        return d;
    }

    private static Map<String, Object> metric(String name, String unit, String better) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("name", name);
        m.put("unit", unit);
        m.put("better", better);
        return m;
    }

    private static double seconds(String flag, String text, boolean positive) throws BadInput {
        String valid = "(valid: seconds in " + (positive ? "(0" : "[0") + ", 86400])";
        try {
            BigDecimal v = new BigDecimal(text.strip());
            if (v.signum() < 0 || (positive && v.signum() == 0) || v.compareTo(BigDecimal.valueOf(86400)) > 0) {
                throw new BadInput("bad value '" + text + "' for --" + flag + " " + valid);
            }
            return v.doubleValue();
        } catch (NumberFormatException e) {
            throw new BadInput("bad value '" + text + "' for --" + flag + " " + valid);
        }
    }

    static Plan parse(List<String> args) throws BadInput {
        String strategy = null;
        String scenario = null;
        String duration = null;
        String warmup = null;
        boolean gate = false;
        Map<String, Long> params = new LinkedHashMap<>();
        for (Param p : Param.ALL) {
            params.put(p.name(), p.defaultValue());
        }
        List<String[]> paramArgs = new ArrayList<>();
        for (int i = 0; i < args.size(); i++) {
            String a = args.get(i);
            String name = a;
            String value = null;
            int eq = a.indexOf('=');
            if (a.startsWith("--") && eq > 0) {
                name = a.substring(0, eq);
                value = a.substring(eq + 1);
            }
            if (name.equals("--gate")) {
                if (value != null) {
                    throw new BadInput("--gate takes no value (" + FLAGS + ")");
                }
                gate = true;
                continue;
            }
            if (!List.of("--strategy", "--scenario", "--param", "--duration-s", "--warmup-s").contains(name)) {
                throw new BadInput((a.startsWith("-") ? "unknown flag '" : "unexpected argument '") + a + "' (" + FLAGS + ")");
            }
            if (value == null) {
                if (i + 1 >= args.size()) {
                    throw new BadInput("flag needs an argument: " + name + " (" + FLAGS + ")");
                }
                value = args.get(++i);
            }
            switch (name) {
                case "--strategy" -> strategy = value;
                case "--scenario" -> scenario = value;
                case "--duration-s" -> duration = value;
                case "--warmup-s" -> warmup = value;
                default -> {
                    int e = value.indexOf('=');
                    if (e <= 0) {
                        throw new BadInput("bad --param '" + value + "' (valid: k=v with k one of "
                                + String.join(", ", Param.ALL.stream().map(Param::name).toList()) + ")");
                    }
                    paramArgs.add(new String[] {value.substring(0, e), value.substring(e + 1)});
                }
            }
        }
        if (strategy == null) {
            throw new BadInput("missing --strategy (valid: " + Strategy.names() + ")");
        }
        Strategy s = Strategy.named(strategy);
        if (scenario != null && !scenario.equals(SCENARIO)) {
            throw new BadInput("unknown scenario '" + scenario + "' (valid: " + SCENARIO + ")");
        }
        for (String[] kv : paramArgs) {
            Param p = Param.named(kv[0]);
            params.put(p.name(), p.parse(kv[1]));
        }
        if (duration == null) {
            throw new BadInput("missing --duration-s (valid: seconds in (0, 86400])");
        }
        double d = seconds("duration-s", duration, true);
        double w = warmup == null ? 0 : seconds("warmup-s", warmup, false);
        return new Plan(s, params, d, w, gate);
    }

    private static void emit(Map<String, Object> event) {
        System.out.println(Json.write(event));
        System.out.flush();
    }

    private static void sleepS(double seconds) throws InterruptedException {
        long ms = (long) (seconds * 1000);
        if (ms > 0) {
            Thread.sleep(ms);
        }
    }

    /** Writes /tmp/perf-PID.map now (jcmd Compiler.perfmap): the JIT's frames of the window, for
     * perf and the collectors; the harness removes it after the repeat (the ready event names the
     * pid). Only here, not at exit: a JVM that fails before ready leaves no map behind. */
    private static void writePerfMap() {
        try {
            ManagementFactory.getPlatformMBeanServer().invoke(
                    new ObjectName("com.sun.management:type=DiagnosticCommand"), "compilerPerfmap",
                    new Object[] {null}, new String[] {String[].class.getName()});
        } catch (Exception e) {
            System.err.println("lettuce-bench: cannot write the perf map: " + e);
        }
    }

    static int run(Plan plan) throws Exception {
        String version = RedisClient.class.getPackage().getImplementationVersion();
        if (version == null || !version.startsWith(plan.strategy().lettuce)) {
            System.err.println("error: strategy " + plan.strategy().id + " needs lettuce " + plan.strategy().lettuce
                    + ", the classpath has " + version + " (run it through the lettuce-bench script)");
            return 1;
        }
        Map<String, Long> p = plan.params();
        JvmGc gc = new JvmGc();
        try (RedisServer redis = RedisServer.start();
                SyncSet bench = new SyncSet(plan.strategy(), redis.port, p.get("computation_threads"), p.get("timeout_ms"))) {
            emit(Map.of("event", "ready", "pids", List.of(ProcessHandle.current().pid(), redis.process.pid())));
            if (plan.gate()) {
                new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)).readLine();
            }
            bench.startThreads(p.get("threads"));
            sleepS(plan.warmupS());
            gc.start();
            emit(Map.of("event", "measure_start"));
            long start = System.nanoTime();
            bench.measure();
            sleepS(plan.durationS());
            bench.stop();
            long end = System.nanoTime();
            gc.end();
            writePerfMap();
            emit(Map.of("event", "measure_end"));
            LatencyHistogram all = new LatencyHistogram();
            long issued = 0;
            long ok = 0;
            long timeouts = 0;
            long errors = 0;
            String firstError = null;
            for (SyncSet.Worker w : bench.join()) {
                all.merge(w.histogram);
                issued += w.issued;
                ok += w.ok;
                timeouts += w.timeouts;
                errors += w.errors;
                if (firstError == null) {
                    firstError = w.firstError;
                }
            }
            double window = (end - start) / 1e9;
            Map<String, Object> result = new LinkedHashMap<>();
            result.put("event", "result");
            result.put("strategy", plan.strategy().id);
            result.put("scenario", SCENARIO);
            result.put("params", p);
            result.put("lettuce_version", version);
            result.put("window_s", window);
            result.put("issued", issued);
            result.put("ok", ok);
            result.put("ops", ok);
            result.put("timeouts", timeouts);
            result.put("errors", errors);
            result.put("ops_per_sec", ok / window);
            result.put("latency_ns", all.summary());
            result.put("jvm_gc", gc.result());
            emit(result);
            if (firstError != null) {
                System.err.println("lettuce-bench: first error: " + firstError);
            }
            return 0;
        }
    }
}
