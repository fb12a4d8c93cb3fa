package harness.lettuce;

/** Bad input on the command line: one line on stderr, exit code 2, nothing started. */
final class BadInput extends Exception {
    BadInput(String message) {
        super(message);
    }
}
