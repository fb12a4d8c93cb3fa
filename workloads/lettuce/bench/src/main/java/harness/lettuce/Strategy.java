package harness.lettuce;

import java.util.List;

/** The strategies: which lettuce version runs and whether commands time out. */
enum Strategy {
    EXECUTOR_EXPIRY("executor-expiry", "6.3.1", true,
            "lettuce 6.3.1.RELEASE: command timeouts on, each expiry scheduled on the computation "
                    + "executor group (Netty DefaultEventExecutorGroup, computation_threads executors), "
                    + "cancelled on completion"),
    WHEEL_EXPIRY("wheel-expiry", "6.3.2", true,
            "lettuce 6.3.2.RELEASE: command timeouts on, armed on Netty's HashedWheelTimer, the expiry "
                    + "submitted to the executor group when it fires (lettuce PR #2774)"),
    NO_TIMEOUT("no-timeout", "6.3.2", false,
            "lettuce 6.3.2.RELEASE with command timeouts off (TimeoutOptions.timeoutCommands(false))");

    final String id;
    /** The lettuce version the launcher script puts on the classpath (lettuce-VERSION/target/lib). */
    final String lettuce;
    final boolean timeouts;
    final String help;

    Strategy(String id, String lettuce, boolean timeouts, String help) {
        this.id = id;
        this.lettuce = lettuce;
        this.timeouts = timeouts;
        this.help = help;
    }

    static Strategy named(String id) throws BadInput {
        for (Strategy s : values()) {
            if (s.id.equals(id)) {
                return s;
            }
        }
        throw new BadInput("unknown strategy '" + id + "' (valid: " + names() + ")");
    }

    static String names() {
        return String.join(", ", List.of(values()).stream().map(s -> s.id).toList());
    }
}
