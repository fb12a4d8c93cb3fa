package harness.lettuce;

import java.math.BigDecimal;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

/** An integer parameter of the suite, and the contract's spelling rule for its values. */
record Param(String name, long defaultValue, long min, long max, String help) {
    static final List<Param> ALL = List.of(
            new Param("threads", 100, 1, 4096,
                    "client threads in the closed loop, each a synchronous SET of one fixed key on the one shared connection"),
            new Param("computation_threads", 8, 1, 256,
                    "lettuce's computation thread pool (the executor group the expiry uses): 8 or 2 in the lettuce issue"),
            new Param("timeout_ms", 60000, 1, 3_600_000,
                    "the fixed command timeout of executor-expiry and wheel-expiry (lettuce's default is 60 s)"));

    /** A JSON number (RFC 8259). */
    private static final Pattern JSON_NUMBER = Pattern.compile("-?(0|[1-9][0-9]*)(\\.[0-9]+)?([eE][+-]?[0-9]+)?");

    static Param named(String name) throws BadInput {
        for (Param p : ALL) {
            if (p.name.equals(name)) {
                return p;
            }
        }
        throw new BadInput("unknown parameter '" + name + "' (valid: "
                + String.join(", ", ALL.stream().map(Param::name).toList()) + ")");
    }

    /** The value of text: any JSON number with an integral value in min..max. */
    long parse(String text) throws BadInput {
        String t = text.strip();
        String valid = "(valid: an integer in " + min + ".." + max + ")";
        if (!JSON_NUMBER.matcher(t).matches()) {
            throw new BadInput("bad value '" + text + "' for parameter '" + name + "' " + valid);
        }
        BigDecimal v;
        try {
            v = new BigDecimal(t);
        } catch (NumberFormatException | ArithmeticException e) {
            throw new BadInput("bad value '" + text + "' for parameter '" + name + "' " + valid);
        }
        boolean plainDigits = t.matches("-?[0-9]+");
        if (v.signum() != 0 && v.stripTrailingZeros().scale() > 0
                || (!plainDigits && v.abs().compareTo(BigDecimal.valueOf((1L << 53) - 1)) > 0)) {
            throw new BadInput("bad value '" + text + "' for parameter '" + name + "' " + valid);
        }
        if (v.compareTo(BigDecimal.valueOf(min)) < 0 || v.compareTo(BigDecimal.valueOf(max)) > 0) {
            throw new BadInput("bad value '" + text + "' for parameter '" + name + "' " + valid);
        }
        return v.longValueExact();
    }

    Map<String, Object> describe() {
        Map<String, Object> d = new LinkedHashMap<>();
        d.put("name", name);
        d.put("type", "int");
        d.put("default", defaultValue);
        d.put("min", min);
        d.put("max", max);
        d.put("help", help);
        return d;
    }
}
